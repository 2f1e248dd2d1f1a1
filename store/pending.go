package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/protocol"
	"github.com/agentmux/agentmux/wire"
)

// pendingTTL is how long an entry stays, answered or not: long past any deadline.
const pendingTTL = 24 * time.Hour

// Errors of Respond.
var (
	ErrNoSuchPending   = errors.New("no such pending request")
	ErrAlreadyAnswered = errors.New("already answered")
	ErrPastDeadline    = errors.New("past its deadline")
	ErrCancelled       = errors.New("cancelled")
	ErrInvalidAnswer   = errors.New("does not fit")
)

// PendingStore keeps requests waiting for a person in a KV bucket every node sees:
// supervisors create them, `agentmux respond` answers them with a compare-and-set, and
// any member of the supervisor delivers the answer.
type PendingStore struct {
	kv      jetstream.KeyValue
	nc      *nats.Conn
	waiting *waitingIndex
	grants  *Grants // where answers for a session or a host are kept; nil: in the session only
}

// KeepGrants stores the grants of answers given for a session or a host in g, which
// revokes them too.
func (s *PendingStore) KeepGrants(g *Grants) { s.grants = g }

// OpenPending opens the pending-request bucket a node declared.
func OpenPending(ctx context.Context, js jetstream.JetStream, nc *nats.Conn) (*PendingStore, error) {
	kv, err := openBucket(ctx, js, wire.PendingBucket, "pending-request")
	if err != nil {
		return nil, err
	}
	return &PendingStore{kv: kv, nc: nc, waiting: newWaitingIndex()}, nil
}

// Create stores a new pending request and announces it on agentmux.human.<sup>.<id>.
// When one with its id is stored already (the ask was asked again), it returns that
// one and announces nothing.
func (s *PendingStore) Create(ctx context.Context, p *wire.PendingRequest) (*wire.PendingRequest, error) {
	data, _ := json.Marshal(p)
	if _, err := s.kv.Create(ctx, p.ID, data); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			stored, _, err := s.Get(ctx, p.ID)
			return stored, err
		}
		return nil, fmt.Errorf("store: write pending request %s: %w", p.ID, err)
	}
	if err := s.nc.PublishRequest(wire.HumanSubject(p.Supervisor, p.ID), wire.EventMark, data); err != nil {
		return nil, fmt.Errorf("store: announce pending request %s: %w", p.ID, err)
	}
	s.waiting.note(p)
	return p, nil
}

// Admit counts p among its session's requests waiting for a person, unless max others
// already wait, and reports how many do, as this node knows: the ones it created and
// those its Deliver watches saw (one created at the same moment on another node may not
// be counted yet). A request admitted but not created is to be forgotten (Forget).
func (s *PendingStore) Admit(p *wire.PendingRequest, max int) (waiting int, ok bool) {
	return s.waiting.admit(p.Session, p.ID, p.Deadline, time.Now(), max)
}

// Forget stops counting request id as waiting.
func (s *PendingStore) Forget(id string) { s.waiting.forget(id) }

// Get returns one pending request and its revision.
func (s *PendingStore) Get(ctx context.Context, id string) (*wire.PendingRequest, uint64, error) {
	var p wire.PendingRequest
	rev, found, err := getJSON(ctx, s.kv, id, "pending request", &p)
	if err == nil && !found {
		err = fmt.Errorf("%w %q; `agentmux pending` lists them", ErrNoSuchPending, id)
	}
	if err != nil {
		return nil, 0, err
	}
	return &p, rev, nil
}

// List returns the requests still waiting for an answer, oldest first.
func (s *PendingStore) List(ctx context.Context) ([]*wire.PendingRequest, error) {
	var out []*wire.PendingRequest
	now := time.Now()
	err := scanBucket(ctx, s.nc, wire.PendingBucket, func(id string, value []byte, _ time.Time) error {
		var p wire.PendingRequest
		if err := json.Unmarshal(value, &p); err != nil {
			return fmt.Errorf("store: pending request %s is corrupt: %w", id, err)
		}
		if p.State == wire.StatePending && now.Before(p.Deadline) {
			out = append(out, &p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: list pending requests: %w", err)
	}
	slices.SortFunc(out, func(a, b *wire.PendingRequest) int { return a.Created.Compare(b.Created) })
	return out, nil
}

// Respond answers a pending request as responder. The first answer wins: a second one,
// one after the deadline, one to a cancelled request or one that does not fit the
// request's shape is refused with an error that says what happened.
func (s *PendingStore) Respond(ctx context.Context, id, responder string, a wire.RespondRequest) (*wire.PendingRequest, error) {
	p, rev, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	value, scope := wire.ForSession(p.Type, a.Value)
	if scope == "" {
		scope = a.Scope
	}
	if scope != "" && scope != wire.ScopeSession && scope != wire.ScopeHost && scope != wire.ScopeRule {
		return p, fmt.Errorf("scope %q %w %s: give %q, %q, %q (the answer saved as a rule) or none", scope, ErrInvalidAnswer, id, wire.ScopeSession, wire.ScopeHost, wire.ScopeRule)
	}
	if err := protocol.ValidateAnswer(p.Message(), value); err != nil {
		return p, fmt.Errorf("%s %w %s: %v", value, ErrInvalidAnswer, id, err)
	}
	switch {
	case p.State == wire.StateCancelled:
		return p, fmt.Errorf("%s was %w: %s; no answer can reach the agent", id, ErrCancelled, p.Cancelled)
	case p.State != wire.StatePending:
		return p, fmt.Errorf("%s: %w by %s at %s", id, ErrAlreadyAnswered, p.Responder, p.AnsweredAt.Format(time.RFC3339))
	case time.Now().After(p.Deadline):
		return p, fmt.Errorf("%s is %w (%s): the agent got the default answer", id, ErrPastDeadline, p.Deadline.Format(time.RFC3339))
	}
	p.State, p.Value, p.Responder, p.Reason, p.Scope, p.AnsweredAt = wire.StateAnswered, value, responder, a.Reason, scope, time.Now()
	if a.Via == wire.ViaToken {
		p.Via = wire.ViaToken
	}
	data, _ := json.Marshal(p)
	if _, err := s.kv.Update(ctx, id, data, rev); err != nil {
		if casConflict(err) {
			cur, _, _ := s.Get(ctx, id)
			if cur != nil {
				return cur, fmt.Errorf("%s: %w by %s a moment ago", id, ErrAlreadyAnswered, cur.Responder)
			}
		}
		return nil, fmt.Errorf("store: answer %s: %w", id, err)
	}
	return p, nil
}

// Cancel ends a request still waiting for a person, saying why: its session ended, it
// got its default, or its node is gone. It returns the request when it cancelled it,
// nil when a person answered first or it was cancelled already.
func (s *PendingStore) Cancel(ctx context.Context, id, why string) (*wire.PendingRequest, error) {
	for {
		p, rev, err := s.Get(ctx, id)
		if err != nil || p.State != wire.StatePending {
			return nil, err
		}
		p.State, p.Cancelled = wire.StateCancelled, why
		data, _ := json.Marshal(p)
		if _, err := s.kv.Update(ctx, id, data, rev); err == nil {
			return p, nil
		} else if !casConflict(err) {
			return nil, fmt.Errorf("store: cancel %s: %w", id, err)
		}
	}
}

// Deliver watches the bucket until ctx ends and sends every answered request of
// supervisor to the agent that asked, once across all nodes: the delivering member
// wins a compare-and-set from answered to delivered first.
func (s *PendingStore) Deliver(ctx context.Context, supervisor string, onError func(error)) error {
	err := watchBucket(ctx, s.kv, func(e jetstream.KeyValueEntry) {
		if e.Operation() != jetstream.KeyValuePut {
			s.waiting.forget(e.Key())
			return
		}
		if err := s.deliver(ctx, supervisor, e); err != nil && onError != nil {
			onError(err)
		}
	}, nil)
	if err != nil {
		return fmt.Errorf("store: watch pending requests: %w", err)
	}
	return nil
}

func (s *PendingStore) deliver(ctx context.Context, supervisor string, e jetstream.KeyValueEntry) error {
	var p wire.PendingRequest
	if err := json.Unmarshal(e.Value(), &p); err != nil {
		return fmt.Errorf("store: pending request %s is corrupt: %w", e.Key(), err)
	}
	s.waiting.note(&p)
	if p.Supervisor != supervisor || p.State != wire.StateAnswered || time.Now().After(p.Deadline) {
		return nil
	}
	// A grant is stored before the request is marked delivered (which tells the
	// console to list it) and its answer goes (the agent's next request may look for
	// it); a member that loses the race below stored the same grant.
	var grant string
	if g := wire.GrantFrom(&p); g != nil && s.grants != nil {
		if err := s.grants.Put(ctx, g); err != nil {
			return err
		}
		grant = g.ID
	}
	p.State = wire.StateDelivered
	data, _ := json.Marshal(&p)
	if _, err := s.kv.Update(ctx, e.Key(), data, e.Revision()); err != nil {
		if casConflict(err) {
			return nil // another member delivered it
		}
		return fmt.Errorf("store: claim the delivery of %s: %w", p.ID, err)
	}
	why := "answered by " + p.Responder + " (" + p.ID + ")"
	if p.Reason != "" {
		why = p.Responder + ": " + p.Reason
	}
	r := &wire.Reply{Value: p.Value, Decider: p.Decider(), Reason: why, Scope: p.Scope, Grant: grant}
	reply, _ := json.Marshal(r)
	if err := s.nc.Publish(p.ReplyTo, reply); err != nil {
		return fmt.Errorf("store: deliver the answer to %s: %w", p.ID, err)
	}
	return nil
}

// casConflict reports whether a KV update lost a compare-and-set race.
func casConflict(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}
