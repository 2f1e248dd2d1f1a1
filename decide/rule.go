package decide

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/permission"
	"github.com/agentmux/agentmux/protocol"
	"github.com/agentmux/agentmux/wire"
)

// Rule answers approvals by its tool permissions (Claude Code's syntax: deny, then
// ask, then allow), and any request by the first rule whose type fits and whose
// pattern matches its text. When nothing decides, an approval of a tool is asked of
// the escalation or fallback, and anything else falls through to the host default.
type Rule struct {
	name        string
	rules       []*config.Rule
	permissions *permission.Set
	hosts       map[string]*config.Host // for each host's working folder
}

// Decide implements Decider.
func (r *Rule) Decide(_ context.Context, req *Request) (Decision, error) {
	call, tool := permission.Call{}, false
	if req.Type == string(protocol.TypeApproval) && !r.permissions.Empty() {
		call, tool = permission.FromApproval(req.Request)
	}
	if tool {
		cwd := ""
		if h := r.hosts[req.Host]; h != nil {
			cwd = h.WorkingDir
		}
		switch v, rule := r.permissions.Decide(call, cwd); v {
		case permission.Deny:
			return Decision{Value: json.RawMessage(`"no"`), Decider: "rule:" + r.name, Reason: "denied by " + rule.Text}, nil
		case permission.Ask:
			return Decision{Verdict: Pass, Decider: "rule:" + r.name, Reason: "ask: " + rule.Text}, nil
		case permission.Allow:
			return Decision{Value: json.RawMessage(`"yes"`), Decider: "rule:" + r.name, Reason: "allowed by " + rule.Text}, nil
		}
	}
	for i, rule := range r.rules {
		if rule.Type != "" && rule.Type != req.Type {
			continue
		}
		if rule.Re != nil && !rule.Re.MatchString(req.Text) {
			continue
		}
		dec := Decision{
			Value:   rule.AnswerJSON,
			Decider: "rule:" + r.name,
			Reason:  fmt.Sprintf("rule %d matched %q", i, rule.Match),
		}
		if rule.Scope == wire.ScopeSession {
			dec.Scope = wire.ScopeSession
		}
		return dec, nil
	}
	if tool {
		return Decision{Verdict: Pass, Decider: "rule:" + r.name, Reason: "no permission rule covers " + call.String()}, nil
	}
	return Decision{Verdict: UseDefault, Decider: "rule:" + r.name, Reason: "no rule matched; host default"}, nil
}

// manifestHosts is the manifest's hosts, or none.
func manifestHosts(m *config.Manifest) map[string]*config.Host {
	if m == nil {
		return nil
	}
	return m.Hosts
}

// Immediate implements Immediate: rules are matched in memory.
func (r *Rule) Immediate() bool { return true }
