package decide

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentmux/agentmux/config"
)

// ErrUnknownStrategy is returned by New for a strategy this package does not provide.
var ErrUnknownStrategy = errors.New("decide: unknown strategy")

// Request is what a supervisor is asked to decide.
type Request struct {
	Host     string
	Session  string
	Type     string // question, approval or tool_call
	ID       string
	Text     string          // question, approval description, or tool name
	Request  json.RawMessage // the canonical request as the agent sent it
	Default  json.RawMessage // what is written when no answer fits
	Deadline time.Time
}

// Decision is a supervisor's answer. With UseDefault the runtime writes the request's
// default as an answer; with Cancelled it declines and the default is written as if no
// answer came.
type Decision struct {
	Value      json.RawMessage
	UseDefault bool
	Cancelled  bool
	Decider    string // who decided: "rule:security", "static:default"
	Reason     string
}

// Decider decides requests.
type Decider interface {
	Decide(ctx context.Context, r *Request) (Decision, error)
}

// New returns the Decider for a configured supervisor.
func New(s *config.Supervisor) (Decider, error) {
	switch s.Strategy {
	case config.StrategyRule:
		return &Rule{name: s.Name, rules: s.Rules}, nil
	case config.StrategyStatic:
		return &Static{name: s.Name, answers: s.AnswersJSON}, nil
	}
	return nil, fmt.Errorf("%w %q for supervisor %q", ErrUnknownStrategy, s.Strategy, s.Name)
}
