package decide

import (
	"context"
	"encoding/json"
)

// Static answers every request of a type with the same value.
type Static struct {
	name    string
	answers map[string]json.RawMessage
}

// Decide implements Decider.
func (s *Static) Decide(_ context.Context, req *Request) (Decision, error) {
	if v, ok := s.answers[req.Type]; ok {
		return Decision{Value: v, Decider: "static:" + s.name, Reason: "static answer for " + req.Type}, nil
	}
	return Decision{Verdict: UseDefault, Decider: "static:" + s.name, Reason: "no static answer for " + req.Type + "; host default"}, nil
}

// Immediate implements Immediate.
func (s *Static) Immediate() bool { return true }
