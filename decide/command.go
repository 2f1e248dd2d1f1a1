package decide

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/internal/sandbox"
	"github.com/agentmux/agentmux/internal/shim"
)

// Command decides by running a program per request: the request JSON on stdin, one
// JSON answer line on stdout, {"value": …} or {"cancelled": true} (an optional
// "reason" is recorded). A non-zero exit, bad output or the deadline fail closed: the
// request gets its default.
type Command struct {
	name    string
	prog    program
	timeout config.Duration
}

// NewCommand builds the command strategy of s; procs as in Deps, sb confines the
// program (nil: unsandboxed).
func NewCommand(s *config.Supervisor, procs *shim.Registry, sb *sandbox.Sandbox) *Command {
	return &Command{name: s.Name, timeout: s.Timeout, prog: program{what: fmt.Sprintf("supervisor %q", s.Name),
		Process: s.Process, procs: procs, sandbox: sb}}
}

// commandInput is what the program reads on stdin.
type commandInput struct {
	Host     string          `json:"host"`
	Session  string          `json:"session"`
	Type     string          `json:"type"`
	ID       string          `json:"id"`
	Text     string          `json:"text"`
	Request  json.RawMessage `json:"request,omitempty"`
	Default  json.RawMessage `json:"default,omitempty"`
	Deadline int64           `json:"deadline,omitempty"` // unix milliseconds
}

// Decide implements Decider.
func (c *Command) Decide(ctx context.Context, r *Request) (Decision, error) {
	if !r.Deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, r.Deadline)
		defer cancel()
	}
	if t := c.timeout.D(); t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t)
		defer cancel()
	}
	in := commandInput{Host: r.Host, Session: r.Session, Type: r.Type, ID: r.ID, Text: r.Text, Request: r.Request, Default: r.Default}
	if !r.Deadline.IsZero() {
		in.Deadline = r.Deadline.UnixMilli()
	}
	stdin, _ := json.Marshal(in)
	out, err := c.prog.run(ctx, append(stdin, '\n'))
	decider := "command:" + c.name
	if err != nil {
		return Decision{Verdict: Decline, Decider: decider, Reason: err.Error()}, nil
	}
	line := strings.TrimSpace(string(out))
	if i := strings.IndexByte(line, '\n'); i >= 0 {
		line = line[:i] // one answer line; anything after it is ignored
	}
	var reply struct {
		Value     json.RawMessage `json:"value"`
		Cancelled bool            `json:"cancelled"`
		Reason    string          `json:"reason"`
	}
	if err := json.Unmarshal([]byte(line), &reply); err != nil || (len(reply.Value) == 0 && !reply.Cancelled) {
		return Decision{Verdict: Decline, Decider: decider, Reason: fmt.Sprintf(`supervisor %q: want one line {"value": …} or {"cancelled": true} on stdout, got %q`, c.name, clip(line))}, nil
	}
	if reply.Cancelled {
		return Decision{Verdict: Decline, Decider: decider, Reason: "the command declined: " + reply.Reason}, nil
	}
	return Decision{Value: reply.Value, Decider: decider, Reason: reply.Reason}, nil
}
