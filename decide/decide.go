package decide

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/internal/sandbox"
	"github.com/agentmux/agentmux/internal/shim"
	"github.com/agentmux/agentmux/protocol"
	"github.com/agentmux/agentmux/wire"
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
	// ReplyTo is the subject the answer goes to; a human decision is delivered there
	// later, by whichever node sees it first.
	ReplyTo string
	// PostProcess asks an llm supervisor to rework a tool's result (a route's
	// post_process).
	PostProcess bool
	// Node asked, for the session's Attempt.
	Node    string
	Attempt int
	// Conflicts are the other live sessions that touched the files the request would
	// change (wire.Ask.Conflicts).
	Conflicts []wire.WorkspaceConflict
}

// Message decodes the request as the agent sent it; a request without a body gets one
// built from its type and text.
func (r *Request) Message() *protocol.Message {
	return protocol.RequestOf(r.Request, r.Type, r.Text)
}

// Verdict is what a decision does with its request.
type Verdict uint8

// The verdicts of a Decision.
const (
	Answer     Verdict = iota // Value is the answer
	UseDefault                // the request's default is written as an answer
	Decline                   // no answer: the default is written as if none came
	Defer                     // a person answers later, to Request.ReplyTo
	// Pass leaves the request to someone else: the supervisor's escalation (a person)
	// or its fallback; with neither, the host's default.
	Pass
)

// Decision is a supervisor's answer: its Verdict, and with Answer its Value.
type Decision struct {
	Verdict   Verdict
	Value     json.RawMessage
	Decider   string // who decided: "rule:security", "llm:architect/gpt-4.1", "human:alice"
	Reason    string
	RiskLevel string // an llm's rating of the request: low, medium, high, critical
	// Scope "session": the same request later in the same session gets this answer at
	// once (approve for the session).
	Scope string
}

// Decider decides requests.
type Decider interface {
	Decide(ctx context.Context, r *Request) (Decision, error)
}

// Immediate is implemented by deciders that answer at once from memory (rule, static):
// the supervisor decides them where the request arrives, with no goroutine or queue.
type Immediate interface {
	Immediate() bool
}

// Deps are what strategies need from outside this package.
type Deps struct {
	Manifest *config.Manifest // to build fallbacks, escalation targets and tools
	Pending  Pending          // stores human decisions; nil: no human strategy
	// ServedTool calls a tool served by another process (agentmux.tool.<name>).
	ServedTool func(ctx context.Context, tool string, call json.RawMessage) (json.RawMessage, error)
	Getenv     func(string) string // default os.Getenv
	HTTPClient *http.Client        // for LLM providers; default http.DefaultClient
	Observe    LLMObserver         // optional
	// Memory keeps llm supervisors' exchanges with sessions; nil: each process its own.
	Memory Memory
	Log    *slog.Logger // default: discard
	// Procs records the process groups of commands and tools while they run (nil: not
	// recorded), for a node starting on the same store to sweep.
	Procs *shim.Registry
	// Sandboxes confine command supervisors and tools, by "supervisors.<name>" and
	// "tools.<name>" (none: unsandboxed).
	Sandboxes sandbox.Set
	// Tracer makes a span of each model call (nil: none).
	Tracer trace.Tracer
}

// New returns the Decider for a configured supervisor: its strategy, with escalation,
// tools and fallback around it as the manifest says.
func New(s *config.Supervisor, deps Deps) (Decider, error) {
	if deps.Getenv == nil {
		deps.Getenv = os.Getenv
	}
	if deps.Log == nil {
		deps.Log = slog.New(slog.DiscardHandler)
	}
	return build(s, deps, map[string]bool{})
}

func build(s *config.Supervisor, deps Deps, seen map[string]bool) (Decider, error) {
	if seen[s.Name] {
		return nil, fmt.Errorf("decide: fallbacks of %q form a cycle", s.Name)
	}
	seen[s.Name] = true
	var d Decider
	var err error
	switch s.Strategy {
	case config.StrategyRule:
		d = &Rule{name: s.Name, rules: s.Rules, permissions: s.Permissions, hosts: manifestHosts(deps.Manifest)}
	case config.StrategyStatic:
		d = &Static{name: s.Name, answers: s.AnswersJSON}
	case config.StrategyCommand:
		d = NewCommand(s, deps.Procs, deps.Sandboxes["supervisors."+s.Name])
	case config.StrategyLLM:
		d, err = NewLLM(s, deps)
	case config.StrategyHuman:
		d, err = NewHuman(s.Name, deps.Pending)
	default:
		return nil, fmt.Errorf("%w %q for supervisor %q", ErrUnknownStrategy, s.Strategy, s.Name)
	}
	if err != nil {
		return nil, err
	}
	post, _ := d.(postProcessor)
	if e := s.Escalate; e != nil && deps.Manifest != nil {
		h, err := NewHuman(e.To, deps.Pending)
		if err != nil {
			return nil, fmt.Errorf("decide: supervisor %q escalates to %q: %w", s.Name, e.To, err)
		}
		d = &escalating{from: s.Name, inner: d, to: h, when: e.Re, levels: e.RiskLevel}
	}
	if deps.Manifest != nil && len(deps.Manifest.Tools) > 0 {
		d = &withTools{inner: d, tools: deps.Manifest.Tools, served: deps.ServedTool, post: post, procs: deps.Procs, sandboxes: deps.Sandboxes}
	}
	if s.Fallback != "" && deps.Manifest != nil {
		fs, ok := deps.Manifest.Supervisors[s.Fallback]
		if !ok {
			return nil, fmt.Errorf("decide: supervisor %q falls back to %q, which is not defined", s.Name, s.Fallback)
		}
		f, err := build(fs, deps, seen)
		if err != nil {
			return nil, err
		}
		d = &withFallback{inner: d, fallback: f}
	}
	return d, nil
}

// withFallback asks fallback when inner fails or declines.
type withFallback struct {
	inner, fallback Decider
}

func (w *withFallback) Decide(ctx context.Context, r *Request) (Decision, error) {
	dec, err := w.inner.Decide(ctx, r)
	if err == nil && dec.Verdict != Decline && dec.Verdict != Pass {
		return dec, nil
	}
	why := dec.Reason
	if err != nil {
		why = err.Error()
	}
	fb, ferr := w.fallback.Decide(ctx, r)
	if ferr != nil {
		return Decision{}, fmt.Errorf("%s; fallback failed too: %w", why, ferr)
	}
	fb.Reason = fmt.Sprintf("fallback after: %s; %s", why, fb.Reason)
	return fb, nil
}
