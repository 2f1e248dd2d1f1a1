package bus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/wire"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// fates records what a StreamPublisher reported, by message id.
type fates struct {
	mu     sync.Mutex
	acked  []string
	failed map[string]error
}

func (f *fates) config(timeout time.Duration) StreamPublisherConfig {
	f.failed = map[string]error{}
	return StreamPublisherConfig{AckTimeout: timeout,
		Acked: func(m *nats.Msg) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.acked = append(f.acked, m.Header.Get(jetstream.MsgIDHeader))
		},
		Failed: func(m *nats.Msg, err error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.failed[m.Header.Get(jetstream.MsgIDHeader)] = err
		}}
}

func (f *fates) settled() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.acked) + len(f.failed)
}

func withID(subject, id, data string) *nats.Msg {
	return &nats.Msg{Subject: subject, Data: []byte(data), Header: nats.Header{jetstream.MsgIDHeader: []string{id}}}
}

func TestStreamPublisherReportsEachMessagesFate(t *testing.T) {
	b := open(t, Config{Listen: "127.0.0.1:0", Name: "streampub-test"})
	auditStream(t, b)
	ctx := context.Background()
	if _, err := b.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "SMALL", Subjects: []string{"small.>"},
		MaxMsgs: 1, Discard: jetstream.DiscardNew}); err != nil {
		t.Fatal(err)
	}
	// Something that takes messages and never acknowledges them, as a stream whose
	// leader is gone would not.
	if _, err := b.Conn.Subscribe("mute.>", func(*nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	var f fates
	p, err := NewStreamPublisher(b.Conn, f.config(2*time.Second)) // long enough for 500 acks on a loaded machine
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	const records = 500
	for i := range records {
		if err := p.Publish(withID(wire.AuditSubject("h", "s"), fmt.Sprintf("r%d", i), `{"kind":"answer"}`)); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(p.Publish(withID(wire.AuditSubject("h", "s"), "r7", `{"kind":"again"}`))) // a duplicate id: stored once, acked
	must(p.Publish(withID("small.a", "first", `{}`)))
	proctest.Eventually(t, "the records acknowledged", func() bool { return f.settled() == records+2 })
	must(p.Publish(withID("small.b", "refused", `{}`))) // the stream is full and discards new ones
	must(p.Publish(withID("nostream.x", "nobody", `{}`)))
	must(p.Publish(withID("mute.x", "silent", `{}`)))

	select {
	case <-p.Idle():
	case <-time.After(10 * time.Second):
		t.Fatalf("still %d pending", p.Pending())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.acked) != records+2 {
		t.Errorf("%d acked; want the %d records, the duplicate and the first of SMALL", len(f.acked), records)
	}
	if err := f.failed["refused"]; err == nil || !strings.Contains(err.Error(), "the stream refused the message") {
		t.Errorf("a message the stream refused: %v", err)
	}
	if err := f.failed["nobody"]; !errors.Is(err, jetstream.ErrNoStreamResponse) {
		t.Errorf("a message no stream takes: %v; want no responders", err)
	}
	if err := f.failed["silent"]; !errors.Is(err, ErrNotAcknowledged) {
		t.Errorf("a message never acknowledged: %v; want ErrNotAcknowledged", err)
	}
	if len(f.failed) != 3 {
		t.Errorf("failed: %v", f.failed)
	}
	if n := proctest.StreamMsgs(t, b.JS, wire.AuditStream); n != records {
		t.Errorf("the audit stream holds %d records; want %d, the duplicate id once", n, records)
	}
}

func TestStreamPublisherPublishesNothingAfterClose(t *testing.T) {
	b := open(t, Config{Listen: "127.0.0.1:0", Name: "streampub-close"})
	var f fates
	p, err := NewStreamPublisher(b.Conn, f.config(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	if err := p.Publish(withID(wire.AuditSubject("h", "s"), "late", `{}`)); err == nil {
		t.Fatal("a publish after Close was taken")
	}
}

// TestIdleWaitsForTheFates: a publisher is not idle while it is still reporting a
// message's fate: one who waits for Idle and then reads the fates finds them all.
func TestIdleWaitsForTheFates(t *testing.T) {
	b := open(t, Config{Listen: "127.0.0.1:0", Name: "streampub-idle"})
	if _, err := b.Conn.Subscribe("mute.>", func(*nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	reporting, release := make(chan struct{}), make(chan struct{})
	p, err := NewStreamPublisher(b.Conn, StreamPublisherConfig{AckTimeout: 100 * time.Millisecond,
		Acked: func(*nats.Msg) {},
		Failed: func(*nats.Msg, error) {
			close(reporting)
			<-release // the moment between the message's leaving pending and its report
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Publish(withID("mute.x", "silent", `{}`)); err != nil {
		t.Fatal(err)
	}
	<-reporting
	select {
	case <-p.Idle():
		t.Fatal("idle while the message's failure is being reported")
	default:
	}
	close(release)
	select {
	case <-p.Idle():
	case <-time.After(10 * time.Second):
		t.Fatal("not idle once the failure was reported")
	}
}
