package node

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/permission"
	"github.com/agentmux/agentmux/wire"
)

// rulesAuditHost is the audit's host for a change of rules given on no request: its
// session is the supervisor's name.
const rulesAuditHost = "_rules"

// serveRules lists the rules files of the rule supervisors this node runs
// (wire.RulesSubject), and writes a person's change into one and reloads the manifest
// (wire.RulesChangeSubjects). Every node answers: each keeps its own file.
func (n *Node) serveRules() error {
	list, err := n.Bus.Conn.Subscribe(wire.RulesSubject, func(m *nats.Msg) {
		if err := bus.CheckRequest(m, wire.RulesSubject); err != nil {
			n.log.Warn("rules request refused", "err", err)
			return
		}
		n.respondRules(m, &wire.RulesReply{Node: n.Name, Files: n.rulesFiles()})
	})
	if err != nil {
		return fmt.Errorf("node: serve %s: %w", wire.RulesSubject, err)
	}
	n.control.subs = append(n.control.subs, list)
	change, err := n.Bus.Conn.Subscribe(wire.RulesChangeSubjects, n.changeRules)
	if err != nil {
		return fmt.Errorf("node: serve %s: %w", wire.RulesChangeSubjects, err)
	}
	n.control.subs = append(n.control.subs, change)
	return nil
}

func (n *Node) respondRules(m *nats.Msg, reply *wire.RulesReply) {
	data, _ := json.Marshal(reply)
	if err := m.Respond(data); err != nil {
		n.log.Warn("rules reply", "err", err)
	}
}

// ruled is the rule supervisors with a rules file this node runs.
func (n *Node) ruled() []*config.Supervisor {
	var out []*config.Supervisor
	for _, s := range n.served().supervisors {
		if s.Strategy == config.StrategyRule && s.RulesPath != "" {
			out = append(out, s)
		}
	}
	return out
}

func (n *Node) rulesFiles() []*wire.RulesFile {
	var out []*wire.RulesFile
	for _, s := range n.ruled() {
		f := &wire.RulesFile{Supervisor: s.Name, Path: s.RulesPath}
		rules, err := permission.ReadFile(s.RulesPath)
		if err != nil {
			f.Error = err.Error()
		} else {
			f.Rules = rules
		}
		out = append(out, f)
	}
	return out
}

// changeRules writes a person's change into a supervisor's rules file and reloads the
// manifest, so that the supervisor's next decision has it. A node that does not run
// the supervisor stays silent; one that runs it without a rules file says so.
func (n *Node) changeRules(m *nats.Msg) {
	if err := bus.CheckRequest(m, wire.RulesChangeSubjects); err != nil {
		n.log.Warn("rules change refused", "err", err)
		return
	}
	sup, person, ok := wire.ParseRulesChangeSubject(m.Subject)
	if !ok {
		n.log.Warn("rules change refused: its subject names no supervisor and person", "subject", m.Subject)
		return
	}
	served := slices.IndexFunc(n.served().supervisors, func(s *config.Supervisor) bool { return s.Name == sup })
	if served < 0 {
		return
	}
	reply := &wire.RulesReply{Node: n.Name}
	var c wire.RuleChange
	if err := json.Unmarshal(m.Data, &c); err != nil {
		reply.Error = "the change is not JSON: " + err.Error()
		n.respondRules(m, reply)
		return
	}
	changed, err := n.applyRules(sup, person, &c)
	reply.Changed = changed
	if err != nil {
		reply.Error = err.Error()
	}
	n.respondRules(m, reply)
}

// applyRules writes c into sup's rules file and reloads the manifest, under the
// reload's lock; it audits a change that wrote the file.
func (n *Node) applyRules(sup, person string, c *wire.RuleChange) (bool, error) {
	verdict, err := permission.ParseVerdict(c.Verdict)
	if err != nil {
		return false, err
	}
	if len(c.Rules) == 0 || !wire.IsName(c.ID) {
		return false, fmt.Errorf("a change needs an id and at least one rule")
	}
	n.conf.reloads.mu.Lock()
	defer n.conf.reloads.mu.Unlock()
	s := n.conf.opts.Manifest.Supervisors[sup]
	if s == nil || s.Strategy != config.StrategyRule || s.RulesPath == "" {
		return false, fmt.Errorf("supervisor %s has no rules file on node %s: give it rules_file in the manifest", sup, n.Name)
	}
	for _, rule := range c.Rules {
		if _, err := permission.Parse(rule, permission.Paths{}); err != nil {
			return false, err
		}
	}
	by := "human:" + person
	entry := permission.Entry{By: by, At: time.Now().UTC().Truncate(time.Second), Host: c.Host, Session: c.Session, Request: c.Request, Note: c.Note}
	header := fmt.Sprintf("Permission rules of supervisor %s (rules_file), checked after the manifest's.\nagentmux writes here when someone saves a rule (the console's \"Always\", agentmux rules); comments are not kept.", sup)
	var done []string
	err = permission.UpdateFile(s.RulesPath, header, func(f *permission.File) (bool, error) {
		for _, rule := range c.Rules {
			e := entry
			e.Rule = rule
			if (c.Remove && f.Remove(verdict, rule)) || (!c.Remove && f.Add(verdict, e)) {
				done = append(done, rule)
			}
		}
		return len(done) > 0, nil
	})
	if err != nil {
		return false, err
	}
	// A node sharing the file with another finds it changed already: it reloads too.
	reloaded := n.reloadManifest(context.Background())
	if len(done) > 0 {
		n.ruleChanged(sup, by, c, done, s.RulesPath)
	}
	if reloaded != nil {
		return len(done) > 0, fmt.Errorf("the rules file %s is written, but the manifest did not reload, so the rules apply at the next reload that does: %w", s.RulesPath, reloaded)
	}
	return len(done) > 0, nil
}

// ruleChanged audits a change of sup's rules file, on the request it was given on,
// under an id the change names, so that every node writing it makes one record.
func (n *Node) ruleChanged(sup, by string, c *wire.RuleChange, rules []string, path string) {
	kind, did := wire.AuditRuleAdded, "added to"
	if c.Remove {
		kind, did = wire.AuditRuleRemoved, "removed from"
	}
	host, session := c.Host, c.Session
	if !wire.IsName(host) || !wire.IsName(session) {
		host, session = rulesAuditHost, sup
	}
	n.log.Info("rules changed", "supervisor", sup, "by", by, "verdict", c.Verdict, "rules", rules, "removed", c.Remove, "file", path)
	value, _ := json.Marshal(c.Verdict)
	n.audit.record(wire.AuditID(session, 0, "rule."+c.ID), &wire.AuditRecord{Time: time.Now().UnixMilli(), Kind: kind, Session: session, Host: host, Node: n.Name,
		Request: c.Request, Type: "approval", Text: strings.Join(rules, "\n"), Value: value, Decider: by, Scope: wire.ScopeRule,
		Reason: fmt.Sprintf("%s %s supervisor %s's rules file (%s)", c.Verdict, did, sup, path)})
}
