package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/wire"
)

// open starts an embedded server and declares the streams and buckets on it, as a
// node does.
func open(t testing.TB) *bus.Bus {
	t.Helper()
	b, err := bus.Open(bus.Config{Listen: "127.0.0.1:0"}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	if _, err := Declare(context.Background(), b.JS, 0, Keep{}, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDeclareMakesTheTaskQueue(t *testing.T) {
	b := open(t)
	tasks, err := b.JS.Stream(context.Background(), wire.TaskStream)
	if err != nil {
		t.Fatal(err)
	}
	if c := tasks.CachedInfo().Config; c.Retention != jetstream.WorkQueuePolicy || c.Subjects[0] != "agentmux.task.>" {
		t.Fatalf("task stream %+v", c)
	}
}

func TestAuditIsDeduplicatedByMessageID(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	for range 3 {
		if _, err := b.JS.Publish(ctx, wire.AuditSubject("w", "s1"), []byte(`{"kind":"answer"}`), jetstream.WithMsgID("s1.q1.answer")); err != nil {
			t.Fatal(err)
		}
	}
	if n := proctest.StreamMsgs(t, b.JS, wire.AuditStream); n != 1 {
		t.Fatalf("audit stream holds %d records; the same message id must be stored once", n)
	}
}

func TestReplicasOnALoneServer(t *testing.T) {
	b, err := bus.Open(bus.Config{Listen: "127.0.0.1:0"}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if n, err := Declare(context.Background(), b.JS, 0, Keep{}, slog.New(slog.DiscardHandler)); err != nil || n != 1 {
		t.Fatalf("a lone server's streams have %d replicas (%v); want 1", n, err)
	}
	_, err = Declare(context.Background(), b.JS, 3, Keep{}, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "this server is not in a cluster: set [nats] replicas = 1") {
		t.Fatalf("replicas = 3 on a lone server: %v", err)
	}
}

// ReadAudit returns every record a session has when the read begins, on each of many
// reads right after the records were stored, and only that session's.
func TestReadAuditReturnsEverySessionRecord(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	for i := range 40 {
		session := fmt.Sprintf("s%d", i)
		for _, what := range []string{"started", "r1.request", "r1.answer", "ended"} {
			if _, err := b.JS.Publish(ctx, wire.AuditSubject("w", session), []byte(`{"kind":"`+what+`","session":"`+session+`"}`), jetstream.WithMsgID(session+"."+what)); err != nil {
				t.Fatal(err)
			}
		}
		records, err := ReadAudit(ctx, b.JS, session)
		if err != nil {
			t.Fatal(err)
		}
		if len(records) != 4 || records[0].Kind != "started" || records[3].Kind != "ended" || records[3].Session != session {
			t.Fatalf("read %d records of %s: %+v", len(records), session, records)
		}
	}
	if records, err := ReadAudit(ctx, b.JS, "nobody"); err != nil || len(records) != 0 {
		t.Fatalf("a session without records: %v %v", records, err)
	}
}

// server is an embedded server with nothing declared, and a log that keeps what
// Declare says.
func server(t *testing.T) (*bus.Bus, *slog.Logger, *strings.Builder) {
	t.Helper()
	b, err := bus.Open(bus.Config{Listen: "127.0.0.1:0"}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	logged := &strings.Builder{}
	return b, slog.New(slog.NewTextHandler(logged, nil)), logged
}

// The audit keeps what [audit] says: a record older than max_age is removed by the
// server; a node started again with other limits changes them, saying so, and a start
// with the same ones changes nothing.
func TestAuditRetention(t *testing.T) {
	b, log, logged := server(t)
	ctx := context.Background()
	if _, err := Declare(ctx, b.JS, 0, Keep{}, log); err != nil {
		t.Fatal(err)
	}
	if _, err := Declare(ctx, b.JS, 0, Keep{}, log); err != nil || strings.Contains(logged.String(), "changing what a stream keeps") {
		t.Fatalf("declared again with the same limits: %v\n%s", err, logged.String())
	}
	if _, err := b.JS.Publish(ctx, wire.AuditSubject("w", "s1"), []byte(`{"kind":"answer"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := Declare(ctx, b.JS, 0, Keep{Audit: Retention{MaxAge: time.Second, MaxBytes: 1 << 20}}, log); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logged.String(), "changing what a stream keeps") || !strings.Contains(logged.String(), "max_age_to=1s") {
		t.Fatalf("the new limits were not said:\n%s", logged.String())
	}
	s, err := b.JS.Stream(ctx, wire.AuditStream)
	if err != nil {
		t.Fatal(err)
	}
	if c := s.CachedInfo().Config; c.MaxAge != time.Second || c.MaxBytes != 1<<20 {
		t.Fatalf("audit stream keeps max_age %v, max_bytes %d", c.MaxAge, c.MaxBytes)
	}
	proctest.Eventually(t, "the record older than max_age removed", func() bool {
		return proctest.StreamMsgs(t, b.JS, wire.AuditStream) == 0
	})
}

// The events' history is a stream of every event, as bounded; a fleet that keeps none
// has the stream removed, saying so.
func TestEventHistory(t *testing.T) {
	b, log, logged := server(t)
	ctx := context.Background()
	if _, err := Declare(ctx, b.JS, 0, Keep{Events: &Retention{MaxAge: time.Hour}}, log); err != nil {
		t.Fatal(err)
	}
	for _, typ := range []string{"session.started", "progress", "session.ended"} {
		if err := b.Conn.PublishRequest(wire.EventSubject("w", "s-1", typ), wire.EventMark, []byte(`{"n":1}`)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	proctest.Eventually(t, "three events in the history", func() bool {
		got = got[:0]
		err := Events(ctx, b.Conn, "s-1", 0, func(e SessionEvent) error {
			got = append(got, e.Type)
			return nil
		})
		return err == nil && strings.Join(got, ",") == "session.started,progress,session.ended"
	})
	if has, err := HasEvents(ctx, b.Conn, "s-1"); !has || err != nil {
		t.Fatalf("HasEvents(s-1) = %v, %v", has, err)
	}
	if has, err := HasEvents(ctx, b.Conn, "s-2"); has || err != nil {
		t.Fatalf("HasEvents(s-2) = %v, %v", has, err)
	}
	if ids, err := EventSessions(ctx, b.JS, "s-"); err != nil || len(ids) != 1 || ids[0] != "s-1" {
		t.Fatalf("sessions of the history: %v %v", ids, err)
	}
	if _, err := Declare(ctx, b.JS, 0, Keep{}, log); err != nil {
		t.Fatal(err)
	}
	if _, err := b.JS.Stream(ctx, wire.EventStream); !errors.Is(err, jetstream.ErrStreamNotFound) || !strings.Contains(logged.String(), "the history of events is removed") {
		t.Fatalf("keep_events = false: the stream %v; log:\n%s", err, logged.String())
	}
}

// TestDeclaresOnASmallDisk starts a server whose JetStream may store 64 MiB, what it
// takes for itself on a disk with about 85 MB free, and declares on it as a node
// does: nothing declared by default may reserve more than that, and an audit bound
// beyond it is refused saying what to do.
func TestDeclaresOnASmallDisk(t *testing.T) {
	srv := proctest.Server(t, &natsserver.Options{Host: "127.0.0.1", Port: -1, JetStream: true,
		StoreDir: t.TempDir(), JetStreamMaxStore: 64 << 20, NoSigs: true, NoLog: true})
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Declare(context.Background(), js, 0, Keep{}, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatalf("a node could not start on a server with 64 MiB of store: %v", err)
	}
	_, err = Declare(context.Background(), js, 0, Keep{Audit: Retention{MaxBytes: 1 << 30}}, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "free disk where the servers store") {
		t.Fatalf("[audit] max_bytes of 1 GiB on 64 MiB of store: %v; want what to do", err)
	}
}
