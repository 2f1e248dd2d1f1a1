package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentmux/agentmux/wire"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ReadAudit reads every audit record of one session, in the order they were stored,
// with message gets (scan): what a reader of the bus may do.
func ReadAudit(ctx context.Context, js jetstream.JetStream, session string) ([]*wire.AuditRecord, error) {
	var out []*wire.AuditRecord
	err := scan(ctx, js.Conn(), wire.AuditStream, wire.AuditSubject("*", session), func(m *storedMsg) error {
		var r wire.AuditRecord
		if err := json.Unmarshal(m.msg.Data, &r); err != nil {
			return fmt.Errorf("audit record %s is not JSON: %w", m.msg.Subject, err)
		}
		out = append(out, &r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the audit stream: %w", err)
	}
	return out, nil
}

// AuditSessions lists the sessions the audit holds whose ids start with prefix, from
// the stream's subjects (one per host and session), sorted.
func AuditSessions(ctx context.Context, js jetstream.JetStream, prefix string) ([]string, error) {
	return streamSessions(ctx, js, wire.AuditStream, wire.AuditSubject("*", "*"), prefix, func(subject string) (string, bool) {
		_, session, ok := wire.ParseAuditSubject(subject)
		return session, ok
	})
}

// streamSessions lists the sessions whose ids start with prefix among the subjects of
// stream that filter matches, each read by session.
func streamSessions(ctx context.Context, js jetstream.JetStream, stream, filter, prefix string, session func(subject string) (string, bool)) ([]string, error) {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", stream, err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return nil, fmt.Errorf("read the sessions of %s: %w", stream, err)
	}
	seen := map[string]bool{}
	for subject := range info.State.Subjects {
		if id, ok := session(subject); ok && strings.HasPrefix(id, prefix) {
			seen[id] = true
		}
	}
	return slices.Sorted(maps.Keys(seen)), nil
}

// AuditQuery says which audit records a search keeps: stored within [Since, Until)
// (zero: no bound), and, where set, of that host, kind, request type, decider (a kind,
// "human", or one, "human:alice") and person (decider human:<User>).
type AuditQuery struct {
	Host, Kind, Type, Decider, User string
	Since, Until                    time.Time
}

// Keeps reports whether r is one the query asks for.
func (q AuditQuery) Keeps(r *wire.AuditRecord) bool {
	at := time.UnixMilli(r.Time)
	switch {
	case q.Host != "" && r.Host != q.Host, q.Kind != "" && r.Kind != q.Kind, q.Type != "" && r.Type != q.Type,
		q.User != "" && r.Decider != "human:"+q.User,
		q.Decider != "" && r.Decider != q.Decider && !strings.HasPrefix(r.Decider, q.Decider+":"),
		!q.Since.IsZero() && at.Before(q.Since), !q.Until.IsZero() && !at.Before(q.Until):
		return false
	}
	return true
}

// ParseTimeBound reads a search's --since or --until: a duration before now ("24h",
// or days: "30d") or an RFC 3339 time; empty is no bound.
func ParseTimeBound(v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if days, ok := strings.CutSuffix(v, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n >= 0 {
			return now.AddDate(0, 0, -n), nil
		}
	}
	if d, err := time.ParseDuration(v); err == nil {
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q: want a duration before now (30d, 24h, 90m) or an RFC 3339 time (2026-11-26T09:00:00Z)", v)
}

// SearchAudit calls each with the audit's records the query keeps, oldest first, with
// message gets from the first one stored at Since. It reads one record a request: a
// day of a busy fleet takes a while, and a narrower Since is quicker. each may end the
// search early with ErrEnough.
func SearchAudit(ctx context.Context, nc *nats.Conn, q AuditQuery, each func(*wire.AuditRecord) error) error {
	host := "*"
	if q.Host != "" {
		host = q.Host
	}
	errStop := errors.New("past the end of the query")
	err := scanFrom(ctx, nc, wire.AuditStream, wire.AuditSubject(host, "*"), q.Since, func(m *storedMsg) error {
		if !q.Until.IsZero() && !m.time.Before(q.Until) {
			return errStop
		}
		var r wire.AuditRecord
		if err := json.Unmarshal(m.msg.Data, &r); err != nil {
			return fmt.Errorf("audit record %s is not JSON: %w", m.msg.Subject, err)
		}
		if !q.Keeps(&r) {
			return nil
		}
		return each(&r)
	})
	if err != nil && !errors.Is(err, errStop) && !errors.Is(err, ErrEnough) {
		return fmt.Errorf("search the audit: %w", err)
	}
	return nil
}

// ErrEnough, from SearchAudit's each, ends the search without an error.
var ErrEnough = errors.New("enough records")

// ReadExchanges reads the model calls' requests and answers of one session ([gateway]
// record = "full"), in the order they were stored: what operators alone may read.
func ReadExchanges(ctx context.Context, js jetstream.JetStream, session string) ([]*wire.ModelExchange, error) {
	var out []*wire.ModelExchange
	err := scan(ctx, js.Conn(), wire.ExchangeStream, wire.ExchangeSubject("*", session), func(m *storedMsg) error {
		var x wire.ModelExchange
		if err := json.Unmarshal(m.msg.Data, &x); err != nil {
			return fmt.Errorf("model exchange %s is not JSON: %w", m.msg.Subject, err)
		}
		out = append(out, &x)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the model exchanges: %w", err)
	}
	return out, nil
}

// ExchangeSessions lists the sessions the exchanges' stream holds whose ids start with
// prefix, sorted.
func ExchangeSessions(ctx context.Context, js jetstream.JetStream, prefix string) ([]string, error) {
	return streamSessions(ctx, js, wire.ExchangeStream, wire.ExchangeSubject("*", "*"), prefix, func(subject string) (string, bool) {
		_, session, ok := wire.ParseExchangeSubject(subject)
		return session, ok
	})
}
