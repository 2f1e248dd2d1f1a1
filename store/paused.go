package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/wire"
)

// Paused keeps the fleet's paused sessions (wire.PausedBucket). An entry is the lock
// between a paused session's waiting task and `agentmux resume`: each takes it from the
// revision it read, and only one of them can.
type Paused struct {
	kv jetstream.KeyValue
}

// ErrPauseTaken is a paused session's entry changed since it was read: its waiting
// task, or a resume by hand, took it first.
var ErrPauseTaken = errors.New("store: the paused session's entry changed since it was read")

// OpenPaused opens the paused sessions' bucket (a node declares it).
func OpenPaused(ctx context.Context, js jetstream.JetStream) (*Paused, error) {
	kv, err := openBucket(ctx, js, wire.PausedBucket, "paused sessions")
	if err != nil {
		return nil, err
	}
	return &Paused{kv: kv}, nil
}

// Put records session p.Session as paused.
func (p *Paused) Put(ctx context.Context, s *wire.PausedSession) error {
	data, _ := json.Marshal(s)
	if _, err := p.kv.Put(ctx, s.Session, data); err != nil {
		return fmt.Errorf("store: record paused session %s: %w", s.Session, err)
	}
	return nil
}

// Get is session id's entry and its revision; nil when it is not paused.
func (p *Paused) Get(ctx context.Context, id string) (*wire.PausedSession, uint64, error) {
	var s wire.PausedSession
	rev, found, err := getJSON(ctx, p.kv, id, "paused session", &s)
	if err != nil || !found {
		return nil, 0, err
	}
	return &s, rev, nil
}

// Update replaces the entry read at rev with s (handed to a copy, running):
// ErrPauseTaken when it changed since.
func (p *Paused) Update(ctx context.Context, s *wire.PausedSession, rev uint64) error {
	data, _ := json.Marshal(s)
	if _, err := p.kv.Update(ctx, s.Session, data, rev); err != nil {
		return taken(s.Session, err)
	}
	return nil
}

// Take removes the entry of session id read at rev, as its session goes on:
// ErrPauseTaken when it changed since.
func (p *Paused) Take(ctx context.Context, id string, rev uint64) error {
	if err := p.kv.Delete(ctx, id, jetstream.LastRevision(rev)); err != nil {
		return taken(id, err)
	}
	return nil
}

func taken(id string, err error) error {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
		return ErrPauseTaken
	}
	return fmt.Errorf("store: paused session %s: %w", id, err)
}

// Watch calls each with the sessions paused, by id: once with those paused now,
// before Watch returns, then after each change, on a goroutine that ends with ctx.
// each gets a new map every time.
func (p *Paused) Watch(ctx context.Context, each func(map[string]*wire.PausedSession)) error {
	err := watchMap(ctx, p.kv, func(_ string, value []byte) *wire.PausedSession {
		var s wire.PausedSession
		if json.Unmarshal(value, &s) != nil {
			return nil
		}
		return &s
	}, each)
	if err != nil {
		return fmt.Errorf("store: watch the paused sessions: %w", err)
	}
	return nil
}
