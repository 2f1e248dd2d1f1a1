package agent

import (
	"fmt"
	"strconv"
	"time"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/dialect"
	"github.com/agentmux/agentmux/gateway"
	"github.com/agentmux/agentmux/protocol"
	"github.com/agentmux/agentmux/wire"
)

// modelCalled is a model call of the process through the node's gateway, as its
// provider answered it; taken is closed once the agent took it in.
type modelCalled struct {
	call  gateway.Call
	taken chan struct{}
}

// takeWait bounds how long the end of a model call's answer waits for the agent to
// take the call in (its budget checked); past it, the answer goes on and the call is
// counted when it is taken.
const takeWait = time.Second

// behindGateway reports whether the host's sessions spend what the gateway measured: its
// agents reach their model through it. Their own usage lines are then claims.
func (a *Agent) behindGateway() bool { return a.host.Model != nil && a.cfg.InProc == nil }

// issuePass gives the process about to start its pass to the node's gateway, and
// returns what its environment holds for it: the gateway's address and the pass's
// token, in place of a key; and the args that point it there, for a dialect that
// needs them (dialect.ModelFlags). A host that reaches no model through the gateway
// gets none.
func (a *Agent) issuePass() (env, args []string, err error) {
	if !a.behindGateway() {
		return nil, nil, nil
	}
	if a.cfg.Gateway == nil {
		return nil, nil, fmt.Errorf("agent: host %s reaches its model through the node's gateway (model.connection = %q), and this node runs none", a.host.Name, a.host.Model.Connection)
	}
	p, err := a.cfg.Gateway.Issue(a.host.Model.Connection, func(c gateway.Call) {
		// On the gateway's goroutine: the answer's end waits until the session counted
		// what it spent, so that a budget it reached refuses the next call.
		m := &modelCalled{call: c, taken: make(chan struct{})}
		a.send(m)
		t := time.NewTimer(takeWait)
		defer t.Stop()
		select {
		case <-m.taken:
		case <-t.C:
		}
	})
	if err != nil {
		return nil, nil, err
	}
	a.pass = p
	if f, ok := a.dialect.(dialect.ModelFlags); ok {
		args = f.ModelArgs(p.BaseURL())
	}
	return p.Env(), args, nil
}

// revokePass ends the pass of a process that is gone.
func (a *Agent) revokePass() {
	a.pass.Revoke()
	a.pass = nil
}

// onModelCalled counts what the provider counted as the session's spend, publishes
// the call (model.call) and checks the session's budget.
func (a *Agent) onModelCalled(m *modelCalled) {
	defer close(m.taken)
	c := m.call
	s := a.sess
	if s == nil || s.id != c.Session {
		if c.Measured {
			a.log.Warn("a model call ended after its session: its tokens are counted by the gateway's metrics, not the session", "session", c.Session, "model", c.Model, "tokens", c.Usage.Tokens())
		}
		return
	}
	ev := &wire.ModelCall{Connection: c.Connection, Model: c.Model, Status: c.Status, TookMs: c.Took.Milliseconds(),
		RetryAfterMs: c.RetryAfter.Milliseconds(), Lost: c.Lost, Finish: c.Finish}
	if c.Measured {
		u := c.Usage
		ev.Usage = &u
		s.usage.Add(&u)
	}
	data := a.encode(ev)
	a.publishOn(s, wire.EventModelCall, data)
	a.recordCall(s, c, ev, data)
	if c.Measured {
		a.checkBudget(s)
	}
	a.atLimit(s, c.Status, c.RetryAfter, c.Connection)
}

// recordCall keeps a model call in the audit, as [gateway] record asks: a model.call
// record (its event), and with "full" its request and answer apart, in the stream
// operators alone read, under the same id.
func (a *Agent) recordCall(s *session, c gateway.Call, ev *wire.ModelCall, data []byte) {
	if a.cfg.Record != config.RecordMetadata && a.cfg.Record != config.RecordFull {
		return
	}
	s.calls++
	rec := a.record(s, wire.EventModelCall)
	rec.Text = fmt.Sprintf("%s %s: %d", c.Connection, c.Model, c.Status)
	rec.Value = data
	id := wire.AuditID(s.id, s.start.Attempt, "model."+strconv.Itoa(s.calls))
	a.cfg.Audit(id, rec)
	if b := c.Bodies; b != nil && a.cfg.Exchange != nil {
		a.cfg.Exchange(&wire.ModelExchange{ID: id, Time: rec.Time, Node: rec.Node, Host: rec.Host, Session: s.id, Attempt: rec.Attempt, Call: *ev,
			Method: b.Method, Path: b.Path, Request: string(b.Request), Response: string(b.Response), RequestBytes: b.RequestBytes, ResponseBytes: b.ResponseBytes,
			RequestCut: b.RequestCut, ResponseCut: b.ResponseCut})
	}
}

// onClaim keeps an agent's usage line, for a host behind the gateway, as a claim: the
// measured spend counts, and whether the two agreed is counted as the session ends.
func (a *Agent) onClaim(s *session, u *protocol.Usage) {
	if u.Runaway() != "" {
		a.log.Warn("an agent behind the gateway claimed an impossible usage; its measured spend counts", "session", s.id, "claim", u.Runaway())
	}
	s.claimed.Add(u)
}

// countClaims says, as session s ends, whether its agent's claims agreed with what the
// gateway measured (the tokens, all models together).
func (a *Agent) countClaims(s *session) {
	if s.claimed.Empty() {
		return
	}
	none := func(string, *protocol.Usage) (float64, bool) { return 0, false }
	claimed, measured := s.claimed.Spend(none).Tokens(), s.usage.Spend(none).Tokens()
	agreed := claimed == measured
	a.cfg.Metrics.UsageClaims.WithLabelValues(a.host.Name, fmt.Sprint(agreed)).Inc()
	if !agreed {
		a.log.Info("the agent's usage claims disagree with what the gateway measured; the measured spend counts", "session", s.id, "claimed_tokens", claimed, "measured_tokens", measured)
	}
}
