package node

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/bus"
)

// A task published on the work queue runs, its session.ended event carries the result,
// and the task is acked (the work queue is empty afterwards).
func TestTaskFromWorkQueue(t *testing.T) {
	f := start(t, simHost("w", "pool = 2")+"[supervisors.s]\nstrategy = \"static\"\nanswers = { question = \"fine\" }\n[[routes]]\nsupervisor = \"s\"\n")
	nc := f.n.Bus.Conn
	ended := make(chan *bus.SessionEnded, 1)
	sub, err := nc.Subscribe(bus.SessionEvents("w", "task-1"), func(m *nats.Msg) {
		if m.Subject == bus.EventSubject("w", "task-1", "session.ended") {
			var e bus.SessionEnded
			if err := json.Unmarshal(m.Data, &e); err != nil {
				t.Errorf("session.ended: %v", err)
			}
			ended <- &e
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	data, _ := json.Marshal(&bus.Task{ID: "task-1", Host: "w", Prompt: script(send(`{"type":"question","id":"q1","question":"ok?"}`), await("q1"), result)})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := f.n.Bus.JS.Publish(ctx, bus.TaskSubject("w"), data, jetstream.WithMsgID("task-1")); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-ended:
		var p struct {
			Answers map[string]struct{ Value string }
		}
		if err := json.Unmarshal(e.Result, &p); e.Outcome != "ok" || err != nil || p.Answers["q1"].Value != "fine" {
			t.Fatalf("session.ended = %+v (%v)", e, err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the task's session did not end")
	}
	waitFor(t, 5*time.Second, func() error {
		info, err := f.n.Bus.JS.Stream(ctx, bus.TaskStream)
		if err != nil {
			return err
		}
		if n := info.CachedInfo().State.Msgs; n != 0 {
			return errNotEmpty(n)
		}
		return nil
	})
}

type errNotEmpty uint64

func (e errNotEmpty) Error() string { return "task not acked: the work queue still holds messages" }
