package decide

import (
	"context"
	"fmt"

	"github.com/agentmux/agentmux/config"
)

// Rule answers with the first rule whose type fits and whose pattern matches the
// request text. When none matches, the request falls through to the host default.
type Rule struct {
	name  string
	rules []*config.Rule
}

// Decide implements Decider.
func (r *Rule) Decide(_ context.Context, req *Request) (Decision, error) {
	for i, rule := range r.rules {
		if rule.Type != "" && rule.Type != req.Type {
			continue
		}
		if rule.Re != nil && !rule.Re.MatchString(req.Text) {
			continue
		}
		return Decision{
			Value:   rule.AnswerJSON,
			Decider: "rule:" + r.name,
			Reason:  fmt.Sprintf("rule %d matched %q", i, rule.Match),
		}, nil
	}
	return Decision{UseDefault: true, Decider: "rule:" + r.name, Reason: "no rule matched; host default"}, nil
}

// Immediate implements Immediate: rules are matched in memory.
func (r *Rule) Immediate() bool { return true }
