package node

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// budgetRaiseQueue is the queue group of the nodes taking raises of daily budgets:
// one node writes each.
const budgetRaiseQueue = "agentmux-budget"

// raiseTimeout bounds the writing of one raise.
const raiseTimeout = 10 * time.Second

// budgetAuditSession is the audit's session of a raise of a host's daily budget.
const budgetAuditSession = "_budget"

// dailyUSD is the manifest's daily budget of each host; 0: none.
func dailyUSD(m *config.Manifest) float64 {
	if m.Budgets.Daily == nil {
		return 0
	}
	return m.Budgets.Daily.USD
}

// dailyGate holds the hosts' queued tasks at their daily budget, and says so in the
// log and the metrics.
func (n *Node) dailyGate(spend *store.SpendStore, m *config.Manifest) *store.DailyGate {
	g := store.NewDailyGate(spend, dailyUSD(m))
	g.Held = func(host, why string) {
		if why == "" {
			n.Metrics.DailyBudgetHeld.WithLabelValues(host).Set(0)
			n.log.Info("daily budget: the host takes its tasks again", "host", host)
			return
		}
		n.Metrics.DailyBudgetHeld.WithLabelValues(host).Set(1)
		n.log.Warn("daily budget reached: "+why, "host", host)
	}
	return g
}

// serveBudgetRaises takes people's raises of a host's daily budget: one node of the
// fleet writes each into the host's day, audits it and answers with the day.
func (n *Node) serveBudgetRaises(spend *store.SpendStore) error {
	return n.serveQueue(wire.BudgetRaiseSubjects, budgetRaiseQueue, "budget raise", func(m *nats.Msg) any {
		reply := n.raiseBudget(spend, m)
		reply.Node = n.Name
		return reply
	})
}

func (n *Node) raiseBudget(spend *store.SpendStore, m *nats.Msg) *wire.BudgetRaiseReply {
	host, person, ok := wire.ParseBudgetRaiseSubject(m.Subject)
	if !ok {
		return &wire.BudgetRaiseReply{Error: "the subject names no host and person: " + m.Subject}
	}
	var r wire.BudgetRaise
	if err := json.Unmarshal(m.Data, &r); err != nil {
		return &wire.BudgetRaiseReply{Error: "the raise is not JSON: " + err.Error()}
	}
	if err := r.Check(); err != nil {
		return &wire.BudgetRaiseReply{Error: err.Error()}
	}
	n.conf.reloads.mu.Lock()
	manifest := n.conf.opts.Manifest
	n.conf.reloads.mu.Unlock()
	if manifest.Hosts[host] == nil {
		return &wire.BudgetRaiseReply{Error: fmt.Sprintf("host %s is not in the manifest of node %s", host, n.Name)}
	}
	limit := dailyUSD(manifest)
	if limit == 0 {
		return &wire.BudgetRaiseReply{Error: "the manifest sets no daily budget ([budgets.daily] usd): there is nothing to raise"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), raiseTimeout)
	defer cancel()
	now := time.Now()
	day, err := spend.Raise(ctx, host, wire.DailyRaise{USD: r.USD, Reset: r.Reset, By: person, At: now.UnixMilli(), Note: r.Note})
	if err != nil {
		return &wire.BudgetRaiseReply{Error: err.Error()}
	}
	if r.Reset {
		released := day.Raises[len(day.Raises)-1].USD
		value, _ := json.Marshal(map[string]float64{"released_usd": released, "limit_usd": limit + day.RaisedUSD})
		n.audit.record(wire.AuditID(budgetAuditSession, 0, "reset."+nuid.Next()), &wire.AuditRecord{Time: now.UnixMilli(), Kind: "budget.reset",
			Host: host, Session: budgetAuditSession, Node: n.Name, Decider: "human:" + person, Value: value, Reason: r.Note,
			Text: fmt.Sprintf("daily spend of %s on %s reset: $%v released, $%v of budget left", host, day.Day, released, limit+day.RaisedUSD)})
		n.log.Info("daily spend reset", "host", host, "by", person, "released", released)
		return &wire.BudgetRaiseReply{Day: day, Limit: limit + day.RaisedUSD}
	}
	value, _ := json.Marshal(map[string]float64{"usd": r.USD, "limit_usd": limit + day.RaisedUSD})
	n.audit.record(wire.AuditID(budgetAuditSession, 0, "raise."+nuid.Next()), &wire.AuditRecord{Time: now.UnixMilli(), Kind: "budget.raised",
		Host: host, Session: budgetAuditSession, Node: n.Name, Decider: "human:" + person, Value: value, Reason: r.Note,
		Text: fmt.Sprintf("daily budget of %s on %s raised by $%v to $%v", host, day.Day, r.USD, limit+day.RaisedUSD)})
	n.log.Info("daily budget raised", "host", host, "by", person, "usd", r.USD, "limit", limit+day.RaisedUSD)
	return &wire.BudgetRaiseReply{Day: day, Limit: limit + day.RaisedUSD}
}
