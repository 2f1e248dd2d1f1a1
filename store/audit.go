package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
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
	s, err := js.Stream(ctx, wire.AuditStream)
	if err != nil {
		return nil, fmt.Errorf("read the audit stream: %w", err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(wire.AuditSubject("*", "*")))
	if err != nil {
		return nil, fmt.Errorf("read the audit stream's sessions: %w", err)
	}
	seen := map[string]bool{}
	for subject := range info.State.Subjects {
		if _, session, ok := wire.ParseAuditSubject(subject); ok && strings.HasPrefix(session, prefix) {
			seen[session] = true
		}
	}
	return slices.Sorted(maps.Keys(seen)), nil
}

// AuditQuery says which audit records SearchAudit reads: stored within [Since, Until)
// (a zero Until: up to now), of one host or all ("").
type AuditQuery struct {
	Host         string
	Since, Until time.Time
}

// SearchAudit calls each with the audit's records the query covers, oldest first, with
// message gets from the first one stored at Since. It reads one record a request: a
// day of a busy fleet takes a while, and a narrower --since is quicker.
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
		return each(&r)
	})
	if err != nil && !errors.Is(err, errStop) {
		return fmt.Errorf("search the audit: %w", err)
	}
	return nil
}
