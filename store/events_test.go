package store

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/wire"
)

// A session with a long history (`agentmux logs` of 200,000 events failed, reading
// one message a round trip under one deadline) is read in pages: every event, in order,
// in a request per thousand, with no deadline but each page's. The other session's
// events between them are passed over.
func TestEventsReadsALongHistoryInPages(t *testing.T) {
	b, log, _ := server(t)
	ctx := context.Background()
	if _, err := Declare(ctx, b.JS, 0, Keep{Events: &Retention{MaxAge: time.Hour}}, log); err != nil {
		t.Fatal(err)
	}
	const n = 25_000
	for i := range n { // as nodes publish events: unacknowledged (the stream is NoAck)
		for _, s := range []string{"long", "other"} {
			if err := b.Conn.Publish(wire.EventSubject("w", s, "progress"), fmt.Appendf(nil, `{"n":%d}`, i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	proctest.Eventually(t, "every event stored", func() bool {
		return proctest.StreamMsgs(t, b.JS, wire.EventStream) == 2*n
	})
	watcher := b.Conn // it hears its own requests: the connection echoes
	var requests atomic.Int64
	sub, err := watcher.Subscribe("$JS.API.>", func(*nats.Msg) { requests.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := watcher.Flush(); err != nil {
		t.Fatal(err)
	}
	next := 0
	err = Events(ctx, b.Conn, "long", 0, func(e SessionEvent) error {
		if want := fmt.Sprintf(`{"n":%d}`, next); string(e.Data) != want || e.Session != "long" {
			return fmt.Errorf("event %d of %s is %s; want %s", next, e.Session, e.Data, want)
		}
		next++
		return nil
	})
	if err != nil || next != n {
		t.Fatalf("read %d events of %d: %v", next, n, err)
	}
	_ = watcher.Flush()
	if got, most := requests.Load(), int64(n/directPage+1); got > most {
		t.Errorf("reading %d events took %d requests; want at most %d, a page of %d each", n, got, most, directPage)
	}
}

// A history declared by a node of before pages (no direct gets) is still read, a
// message a request.
func TestEventsOfAHistoryWithoutDirectGets(t *testing.T) {
	b, _, _ := server(t)
	ctx := context.Background()
	if _, err := b.JS.CreateStream(ctx, jetstream.StreamConfig{Name: wire.EventStream, Subjects: []string{wire.AllEvents}, NoAck: true}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := b.Conn.Publish(wire.EventSubject("w", "s-1", "progress"), fmt.Appendf(nil, `{"n":%d}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	proctest.Eventually(t, "three events stored", func() bool { return proctest.StreamMsgs(t, b.JS, wire.EventStream) == 3 })
	read := 0
	if err := Events(ctx, b.Conn, "s-1", 0, func(SessionEvent) error { read++; return nil }); err != nil || read != 3 {
		t.Fatalf("read %d events of 3: %v", read, err)
	}
}
