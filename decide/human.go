package decide

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/agentmux/agentmux/wire"
)

// Pending is where requests wait for a person: a store any node reads, so whichever
// node sees the answer first delivers it (store.PendingStore is the NATS KV one).
type Pending interface {
	// Create stores p, unless a request with its id is stored already: then it returns
	// that one (an ask asked again finds what a person already has).
	Create(ctx context.Context, p *wire.PendingRequest) (*wire.PendingRequest, error)
	// Admit counts p among its session's requests waiting for a person, unless max
	// others already wait (then ok is false); it returns how many do.
	Admit(p *wire.PendingRequest, max int) (waiting int, ok bool)
	// Forget stops counting request id (admitted, but not stored).
	Forget(id string)
}

// A session cannot bury people in requests: past these, a request it sends a person
// gets its default at once, and the audit says why.
const (
	// MaxWaitingPerSession is how many of a session's requests may wait for people at
	// once.
	MaxWaitingPerSession = 20
	// MaxPersonText is the longest request text a person is handed, in bytes.
	MaxPersonText = 16 << 10
)

// Human hands the request to a person and defers: the answer is delivered to the
// request's reply subject when someone responds (`agentmux respond`), by any node.
type Human struct {
	name    string
	pending Pending
}

// NewHuman builds the human strategy of supervisor name.
func NewHuman(name string, p Pending) (*Human, error) {
	if p == nil {
		return nil, fmt.Errorf("decide: supervisor %q is human, but this node has no pending-request store (JetStream KV)", name)
	}
	return &Human{name: name, pending: p}, nil
}

// Decide implements Decider.
func (h *Human) Decide(ctx context.Context, r *Request) (Decision, error) {
	return h.hand(ctx, r, handing{})
}

// handing is what a person is told of an escalated request: the supervisor that
// escalated it and why, what it would have answered, and the risk its model rated ("":
// the agent's own rating, if any).
type handing struct {
	from, why, risk string
	suggestion      json.RawMessage
}

// hand stores r for a person, with what an escalating supervisor says of it.
func (h *Human) hand(ctx context.Context, r *Request, e handing) (Decision, error) {
	if r.ReplyTo == "" {
		return Decision{}, errors.New("the request has no reply subject; a person's answer could not be delivered")
	}
	if len(r.Text) > MaxPersonText {
		return Decision{Verdict: UseDefault, Decider: "human:" + h.name,
			Reason: fmt.Sprintf("not handed to a person: its text is %d bytes, over the %d a person is shown; the default", len(r.Text), MaxPersonText)}, nil
	}
	m := r.Message()
	p := &wire.PendingRequest{ID: pendingID(r.ReplyTo), Supervisor: h.name, Host: r.Host, Session: r.Session, Request: r.ID,
		Type: r.Type, Text: r.Text, Body: r.Request, Default: r.Default, Created: time.Now(), Deadline: r.Deadline,
		ReplyTo: r.ReplyTo, Suggestion: e.suggestion, Escalation: e.why, EscalatedBy: e.from, State: wire.StatePending, Node: r.Node, Attempt: r.Attempt,
		Conflicts: r.Conflicts, Risk: e.risk}
	if p.Risk == "" {
		p.Risk = m.RiskLevel
	}
	for _, o := range m.Options {
		p.Options = append(p.Options, o.Value)
	}
	if n, ok := h.pending.Admit(p, MaxWaitingPerSession); !ok {
		return Decision{Verdict: UseDefault, Decider: "human:" + h.name,
			Reason: fmt.Sprintf("not handed to a person: session %s already has %d requests waiting for people, the most it may; the default", r.Session, n)}, nil
	}
	stored, err := h.pending.Create(ctx, p)
	if err != nil {
		h.pending.Forget(p.ID)
		return Decision{}, fmt.Errorf("store the request for a person: %w", err)
	}
	if stored.State == wire.StateDelivered {
		// Asked again after its answer went out (the asker's connection was down then).
		return Decision{Value: stored.Value, Decider: stored.Decider(),
			Reason: "answered by " + stored.Responder + " (agentmux respond " + stored.ID + ")"}, nil
	}
	p = stored
	return Decision{Verdict: Defer, Decider: "human:" + h.name, Reason: "waiting for a person: agentmux respond " + p.ID + " <answer>"}, nil
}

// pendingID names the pending request of one ask by its reply subject's last token,
// which is the same each time the ask is asked again: a re-ask after a member died
// finds the request a person already has instead of making a second one.
func pendingID(replyTo string) string {
	return "h-" + replyTo[strings.LastIndexByte(replyTo, '.')+1:]
}

// escalating hands inner's decision to a person when the request's text matches when,
// or the model rated it at one of levels. The person sees inner's answer as a
// suggestion.
type escalating struct {
	from   string // the supervisor escalating
	inner  Decider
	to     *Human
	when   *regexp.Regexp
	levels []string
}

func (e *escalating) Decide(ctx context.Context, r *Request) (Decision, error) {
	if e.when != nil && e.when.MatchString(r.Text) {
		return e.to.hand(ctx, r, handing{from: e.from, why: fmt.Sprintf("the request matches %q", e.when)})
	}
	dec, err := e.inner.Decide(ctx, r)
	if err == nil && dec.Verdict == Pass {
		return e.to.hand(ctx, r, handing{from: e.from, why: dec.Decider + ": " + dec.Reason})
	}
	if err != nil || dec.Verdict == Defer || !slices.Contains(e.levels, dec.RiskLevel) {
		return dec, err
	}
	why := fmt.Sprintf("%s rated the risk %s: %s", dec.Decider, dec.RiskLevel, dec.Reason)
	return e.to.hand(ctx, r, handing{from: e.from, why: why, risk: dec.RiskLevel, suggestion: dec.Value})
}
