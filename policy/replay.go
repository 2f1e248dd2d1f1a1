package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/decide"
	"github.com/agentmux/agentmux/wire"
)

// Past is a request the fleet answered, as the audit keeps it.
type Past struct {
	Host, Session, Request, Type string
	Text                         string
	Ask                          json.RawMessage // the request as its agent asked it
	Value                        json.RawMessage // its answer
	Outcome                      string          // answered, or how it got its default
	Decider                      string
	At                           time.Time
}

// PastFromAudit is every request in records that has its ask and an answer, oldest
// first (records from before agentmux kept the ask are left out: nothing to decide).
func PastFromAudit(records []*wire.AuditRecord) []Past {
	requests := requestRecords(records)
	var out []Past
	for _, r := range records {
		if r.Kind != "answer" || r.Type == "budget" {
			continue
		}
		ask, text := r.Ask, r.Text
		if q := requests[requestKey(r)]; q != nil { // asked, and answered later: the request's record says what
			ask, text = q.Ask, q.Text
		}
		if len(ask) == 0 {
			continue
		}
		out = append(out, Past{Host: r.Host, Session: r.Session, Request: r.Request, Type: r.Type, Text: text, Ask: ask,
			Value: r.Value, Outcome: r.Outcome, Decider: r.Decider, At: time.UnixMilli(r.Time)})
	}
	return out
}

// The ways a replayed request's decision can differ from the one the fleet made.
const (
	Same         = "same"
	AllowsDenied = "would allow what was denied"
	DeniesAllow  = "would deny what was allowed"
	AsksInstead  = "would ask a person instead of deciding"
	DecidesAsked = "would decide what a person decided"
	AnswersOther = "would answer differently"
)

// Replayed is a past request decided again by another manifest.
type Replayed struct {
	Past
	NewValue   json.RawMessage // nil: the default, or a person's answer to come
	NewDecider string
	WouldAsk   string // the supervisor whose person (or external supervisor) it would wait for
	Change     string
	// Dangerous: a person denied it, and the new policy would allow it.
	Dangerous bool
	Error     string
}

// Replayer decides past requests again with a manifest's routes and supervisors,
// offline: a person is not asked (the request "would ask"), nothing is delivered.
type Replayer struct {
	m        *config.Manifest
	deciders map[string]decide.Decider
	timeout  time.Duration
}

// NewReplayer builds m's supervisors with deps (its HTTP client and Getenv for the llm
// supervisors; Pending and Manifest are set here).
func NewReplayer(m *config.Manifest, deps decide.Deps) (*Replayer, error) {
	deps.Manifest, deps.Pending = m, wouldAsk{}
	r := &Replayer{m: m, deciders: map[string]decide.Decider{}, timeout: config.DefaultQuestionTimeout}
	for name, s := range m.Supervisors {
		if s.Strategy == config.StrategyExternal {
			continue
		}
		d, err := decide.New(s, deps)
		if err != nil {
			return nil, fmt.Errorf("supervisor %s: %w", name, err)
		}
		r.deciders[name] = d
	}
	return r, nil
}

// Replay decides p again and says how the decision differs.
func (r *Replayer) Replay(ctx context.Context, p Past) Replayed {
	out := Replayed{Past: p}
	route := r.m.Routes.Match(p.Host, p.Type, p.Text, false)
	switch {
	case route == nil:
		out.NewDecider = "runtime"
	case r.m.Supervisors[route.Supervisor] != nil && r.m.Supervisors[route.Supervisor].Strategy == config.StrategyExternal:
		out.WouldAsk = route.Supervisor
	default:
		d := r.deciders[route.Supervisor]
		if d == nil {
			out.Error = "route to supervisor " + route.Supervisor + ", which the manifest does not define"
			break
		}
		ctx, cancel := context.WithTimeout(ctx, r.timeout)
		decision, err := d.Decide(ctx, &decide.Request{Host: p.Host, Session: p.Session, Type: p.Type, ID: p.Request, Text: p.Text,
			Request: p.Ask, Deadline: time.Now().Add(r.timeout), ReplyTo: "_replay." + p.Request, Node: "replay"})
		cancel()
		switch {
		case err != nil:
			out.Error = err.Error()
		case decision.Verdict == decide.Answer:
			out.NewValue, out.NewDecider = decision.Value, decision.Decider
		case decision.Verdict == decide.Defer:
			out.WouldAsk = route.Supervisor
		default:
			out.NewDecider = decision.Decider
		}
	}
	out.Change, out.Dangerous = compare(&out)
	return out
}

// compare classes the new decision against the old.
func compare(x *Replayed) (string, bool) {
	old, now := word(x.Value), word(x.NewValue)
	person := (&Decided{Decider: x.Decider}).Person()
	switch {
	case x.Error != "":
		return "", false
	case x.WouldAsk != "":
		if person {
			return Same, false
		}
		return AsksInstead, false
	case x.Type == "approval" && old == "no" && now == "yes":
		return AllowsDenied, person && x.Outcome == "answered"
	case x.Type == "approval" && old == "yes" && now != "yes":
		return DeniesAllow, false
	case x.Type != "approval" && x.NewValue != nil && !bytes.Equal(compact(x.Value), compact(x.NewValue)):
		return AnswersOther, false
	case person:
		return DecidesAsked, false
	}
	return Same, false
}

// word is an answer that is a JSON string; "" otherwise.
func word(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) != nil {
		return ""
	}
	return s
}

func compact(v json.RawMessage) []byte {
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return v
	}
	return b.Bytes()
}

// wouldAsk stands for the pending-request store in a replay: a request handed to a
// person is stored nowhere, and waits.
type wouldAsk struct{}

func (wouldAsk) Create(_ context.Context, p *wire.PendingRequest) (*wire.PendingRequest, error) {
	return p, nil
}
func (wouldAsk) Admit(*wire.PendingRequest, int) (int, bool) { return 0, true }
func (wouldAsk) Forget(string)                               {}
