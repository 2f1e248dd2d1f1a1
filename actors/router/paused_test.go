package router

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/actors/agent"
	"github.com/agentmux/agentmux/internal/bustest"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// A paused session's entry decides which delivery of its task runs: the waiting task
// unless a resume by hand took the entry, the copy once the entry is handed to it (and
// again, should its node die), and never both.
func TestWhichDeliveryOfAPausedSessionRuns(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	b := bustest.Open(t, "paused-test", log)
	ctx := context.Background()
	paused, err := store.OpenPaused(ctx, b.JS)
	if err != nil {
		t.Fatal(err)
	}
	r := &Router{cfg: Config{Env: &agent.Env{Log: log, Node: "n1"}, Paused: paused}}
	c, err := b.JS.CreateConsumer(ctx, wire.TaskStream, jetstream.ConsumerConfig{FilterSubject: wire.TaskSubject("w"), AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	deliveries := func(session string) (waiting, copy jetstream.Msg) {
		for _, id := range []string{session, session + ".resume.1"} {
			msg := &nats.Msg{Subject: wire.TaskSubject("w"), Data: []byte(`{"id":"` + session + `","prompt":"p"}`), Header: nats.Header{}}
			msg.Header.Set(jetstream.MsgIDHeader, id)
			if _, err := b.JS.PublishMsg(ctx, msg); err != nil {
				t.Fatal(err)
			}
		}
		got, err := c.Fetch(2, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		var msgs []jetstream.Msg
		for m := range got.Messages() {
			msgs = append(msgs, m)
			_ = m.Term() // out of the queue: the next case's are the only ones
		}
		if len(msgs) != 2 {
			t.Fatalf("fetched %d deliveries", len(msgs))
		}
		return msgs[0], msgs[1]
	}
	seqOf := func(m jetstream.Msg) uint64 {
		meta, err := m.Metadata()
		if err != nil {
			t.Fatal(err)
		}
		return meta.Sequence.Stream
	}
	pause := func(session string, waiting jetstream.Msg, copy string) {
		if err := paused.Put(ctx, &wire.PausedSession{Session: session, Host: "w", Seq: seqOf(waiting), Copy: copy}); err != nil {
			t.Fatal(err)
		}
	}
	entry := func(session string) *wire.PausedSession {
		e, _, err := paused.Get(ctx, session)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}

	waiting, copy := deliveries("t-over")
	pause("t-over", waiting, "")
	if v := r.pauseOver(ctx, "t-over", copy, true); v != notYet {
		t.Errorf("a copy before its entry is handed to it: %v; want notYet", v)
	}
	if v := r.pauseOver(ctx, "t-over", waiting, false); v != runs || entry("t-over") != nil {
		t.Errorf("the waiting task at the pause's end: %v, entry %+v; want it to run and remove the entry", v, entry("t-over"))
	}
	if v := r.pauseOver(ctx, "t-over", copy, true); v != superseded {
		t.Errorf("a copy after the waiting task took the entry: %v; want superseded", v)
	}

	waiting, copy = deliveries("t-hand")
	pause("t-hand", waiting, "t-hand.resume.1")
	if v := r.pauseOver(ctx, "t-hand", waiting, false); v != superseded {
		t.Errorf("the waiting task of a session resumed by hand: %v; want superseded", v)
	}
	for range 2 { // and again, its node gone
		if v := r.pauseOver(ctx, "t-hand", copy, true); v != runs {
			t.Errorf("the copy the entry is handed to: %v; want it to run", v)
		}
	}
	if e := entry("t-hand"); e == nil || e.Running != "n1" {
		t.Errorf("the entry of a copy that runs: %+v; want it kept, running on n1", e)
	}

	waiting, copy = deliveries("t-other")
	pause("t-other", waiting, "t-other.resume.9")
	if v := r.pauseOver(ctx, "t-other", copy, true); v != superseded {
		t.Errorf("a copy the entry is not handed to: %v; want superseded", v)
	}
	if v := r.pauseOver(ctx, "t-none", waiting, false); v != runs {
		t.Errorf("a task of a session not paused: %v; want it to run", v)
	}
}

// TestATaskForANodeIsItsForAMinute: a task resumed on a node by hand (wire.Task.Node) is
// left to that node by the others for a minute from its time in the queue, whatever
// the task says, and taken by any after.
func TestATaskForANodeIsItsForAMinute(t *testing.T) {
	b := bustest.Open(t, "aim-test", slog.New(slog.DiscardHandler))
	ctx := context.Background()
	if _, err := b.JS.Publish(ctx, wire.TaskSubject("w"), []byte(`{"id":"t-aim","prompt":"p","node":"n2","node_until":99999999999999}`)); err != nil {
		t.Fatal(err)
	}
	c, err := b.JS.CreateConsumer(ctx, wire.TaskStream, jetstream.ConsumerConfig{FilterSubject: wire.TaskSubject("w"), AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := c.Next(jetstream.FetchMaxWait(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var task wire.Task
	if err := json.Unmarshal(msg.Data(), &task); err != nil {
		t.Fatal(err)
	}
	on := func(node string) *Router { return &Router{cfg: Config{Env: &agent.Env{Node: node}}} }
	now := time.Now()
	for _, c := range []struct {
		node string
		at   time.Time
		want bool
	}{{"n1", now, true}, {"n1", now.Add(wire.TaskAimedFor - time.Second), true}, {"n2", now, false}, {"n1", now.Add(wire.TaskAimedFor + time.Second), false}} {
		if got := on(c.node).forAnother(&task, msg, c.at); got != c.want {
			t.Errorf("on %s, %v after: for another node %v; want %v", c.node, c.at.Sub(now).Round(time.Second), got, c.want)
		}
	}
	if got := on("n1").forAnother(&wire.Task{ID: "t-any", Prompt: "p"}, msg, now); got {
		t.Error("a task for no node is left to another")
	}
}

// TestACopyWaitsLongerEachTime: a copy whose entry is not handed to it comes back after
// a second, then twice as long each time, up to a minute.
func TestACopyWaitsLongerEachTime(t *testing.T) {
	for n, want := range map[uint64]time.Duration{0: time.Second, 1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 7: time.Minute, 1000: time.Minute} {
		if got := recheckAfter(n); got != want {
			t.Errorf("delivered %d times: again after %v; want %v", n, got, want)
		}
	}
}
