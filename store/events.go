package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/wire"
)

// SessionEvent is one event of a session's history, as the node published it.
type SessionEvent struct {
	Subject string    `json:"subject"`
	Host    string    `json:"host"`
	Session string    `json:"session"`
	Type    string    `json:"type"`
	Time    time.Time `json:"time"` // when the server stored it
	Data    []byte    `json:"-"`
	Seq     uint64    `json:"-"` // its place in the history: Events(from: Seq+1) reads on
}

// Events calls each with session's events the history holds, oldest first, from
// sequence from on (0: the first), in pages of a thousand: a ctx without a deadline
// bounds each page, not the whole history. The history is kept while [audit]
// keep_events is on; a fleet that keeps none has no AGENTMUX_EVENTS stream, which is an
// error here.
func Events(ctx context.Context, nc *nats.Conn, session string, from uint64, each func(SessionEvent) error) error {
	err := scanDirect(ctx, nc, wire.EventStream, wire.SessionEvents("*", session), from, func(m *storedMsg) error {
		host, s, typ, ok := wire.ParseEventSubject(m.msg.Subject)
		if !ok {
			return nil
		}
		return each(SessionEvent{Subject: m.msg.Subject, Host: host, Session: s, Type: typ, Time: m.time, Data: m.msg.Data, Seq: m.seq})
	})
	if err != nil {
		return fmt.Errorf("read the history of events: %w", err)
	}
	return nil
}

// EventSessions lists the sessions the history of events holds whose ids start with
// prefix, sorted.
func EventSessions(ctx context.Context, js jetstream.JetStream, prefix string) ([]string, error) {
	return streamSessions(ctx, js, wire.EventStream, wire.AllEvents, prefix, func(subject string) (string, bool) {
		_, session, _, ok := wire.ParseEventSubject(subject)
		return session, ok
	})
}

// HasEvents reports whether the history holds an event of session.
func HasEvents(ctx context.Context, nc *nats.Conn, session string) (bool, error) {
	_, err := msgGet(ctx, nc, wire.EventStream, msgGetRequest{NextFor: wire.SessionEvents("*", session)})
	switch {
	case errors.Is(err, errNoMessage):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read the history of events: %w", err)
	}
	return true, nil
}
