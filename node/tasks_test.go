package node

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentmux/agentmux/actors/agent"
	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/sim"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// A task published on the work queue runs, its session.ended event carries the result,
// and the task is acked (the work queue is empty afterwards).
func TestTaskFromWorkQueue(t *testing.T) {
	f := start(t, simHost("w", "pool = 2")+"[supervisors.s]\nstrategy = \"static\"\nanswers = { question = \"fine\" }\n[[routes]]\nsupervisor = \"s\"\n")
	nc := f.n.Bus.Conn
	ended := make(chan *wire.SessionEnded, 1)
	sub, err := nc.Subscribe(wire.SessionEvents("w", "task-1"), func(m *nats.Msg) {
		if m.Subject == wire.EventSubject("w", "task-1", "session.ended") {
			var e wire.SessionEnded
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
	data, _ := json.Marshal(&wire.Task{ID: "task-1", Host: "w", Prompt: script(send(`{"type":"question","id":"q1","question":"ok?"}`), await("q1"), result)})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := f.n.Bus.JS.Publish(ctx, wire.TaskSubject("w"), data, jetstream.WithMsgID("task-1")); err != nil {
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
	proctest.Within(t, 5*time.Second, func() error { return queueEmpty(ctx, f) })
}

// queueEmpty says whether the work queue holds no task: each was acked or terminated.
func queueEmpty(ctx context.Context, f *fixture) error {
	info, err := f.n.Bus.JS.Stream(ctx, wire.TaskStream)
	if err != nil {
		return err
	}
	if n := info.CachedInfo().State.Msgs; n != 0 {
		return errNotEmpty(n)
	}
	return nil
}

type errNotEmpty uint64

func (e errNotEmpty) Error() string { return "task not acked: the work queue still holds messages" }

// A task delivered again after an attempt of it ended ok (its acknowledgement lost,
// or crossing the redelivery) is acknowledged and not run a second time. The test
// plays the node whose ack was lost: it takes the task off the node's own consumer,
// records the ok end in the audit, and hands it back while the node's one slot is
// busy.
func TestTaskEndedOKIsNotRunAgain(t *testing.T) {
	f := start(t, simHost("w", "pool = 1\nquestion_timeout = \"60s\"")+"[supervisors.gate]\nstrategy = \"external\"\n[[routes]]\nsupervisor = \"gate\"\n")
	js := f.n.Bus.JS
	gate := make(chan *nats.Msg, 1)
	answerer(t, f.n.Bus.Conn, "gate", func(_ *wire.Ask, m *nats.Msg) { gate <- m })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	publish := func(id, prompt string) {
		t.Helper()
		data, _ := json.Marshal(&wire.Task{ID: id, Host: "w", Prompt: prompt})
		if _, err := js.Publish(ctx, wire.TaskSubject("w"), data, jetstream.WithMsgID(id)); err != nil {
			t.Fatal(err)
		}
	}
	// The busy task holds the node's one slot until the test answers its question.
	publish("t-busy", script(send(`{"type":"question","id":"q1","question":"go on?"}`), await("q1"), result))
	var held *nats.Msg
	select {
	case held = <-gate:
	case <-ctx.Done():
		t.Fatal("the busy task never asked")
	}
	publish("t-done", script(result))
	cons, err := js.Consumer(ctx, wire.TaskStream, "host_w")
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var first jetstream.Msg
	for m := range batch.Messages() {
		first = m
	}
	if first == nil {
		t.Fatalf("the test did not get t-done's first delivery: %v", batch.Error())
	}
	ended, _ := json.Marshal(&wire.AuditRecord{Kind: "session.ended", Time: time.Now().UnixMilli(), Node: "lost", Host: "w", Session: "t-done", Outcome: "ok"})
	if _, err := js.Publish(ctx, wire.AuditSubject("w", "t-done"), ended); err != nil {
		t.Fatal(err)
	}
	if err := first.Nak(); err != nil {
		t.Fatal(err)
	}
	reply(t, held, `"yes"`)
	proctest.Within(t, 20*time.Second, func() error {
		info, err := js.Stream(ctx, wire.TaskStream)
		if err != nil {
			return err
		}
		if n := info.CachedInfo().State.Msgs; n != 0 {
			return errNotEmpty(n)
		}
		return nil
	})
	records, err := store.ReadAudit(ctx, js, "t-done")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range records {
		if r.Kind != "session.ended" || r.Node != "lost" {
			t.Errorf("t-done ran again: %+v", r)
		}
	}
}

// More than a thousand tasks of one host run at once when the node has the slots:
// the work queue's consumer puts no cap of its own on tasks taken and not yet acked
// (NATS's default would hold the whole fleet to 1,000 per host).
func TestOverAThousandTasksRunAtOnce(t *testing.T) {
	const tasks = 1100
	f := start(t, fmt.Sprintf("[hosts.w]\ncommand = \"inproc\"\npool = %d\n", tasks), func(o *Options) {
		o.InProc = map[string]agent.InProc{"w": func(in io.Reader, out io.Writer) error { return sim.Run(in, out, sim.Options{}) }}
	})
	hold := (&sim.Load{Hold: sim.Duration(2 * time.Minute)}).Prompt()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range tasks {
		data, _ := json.Marshal(&wire.Task{ID: fmt.Sprintf("t-%d", i), Host: "w", Prompt: hold})
		if _, err := f.n.Bus.JS.PublishAsync(wire.TaskSubject("w"), data, jetstream.WithMsgID(fmt.Sprintf("t-%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-f.n.Bus.JS.PublishAsyncComplete():
	case <-ctx.Done():
		t.Fatal("the tasks were not all acknowledged by the stream")
	}
	active := f.n.Metrics.SessionsActive.WithLabelValues("w")
	proctest.Within(t, time.Minute, func() error {
		if n := testutil.ToFloat64(active); n != tasks {
			return fmt.Errorf("%v sessions running at once; want all %d", n, tasks)
		}
		return nil
	})
}

// TestTaskWithABadIDIsRefused: a raw task on the bus whose id no subject can carry
// ("bad.id") is not run under another id: the node says why in its log, counts it
// invalid and terminates the message, so the work queue is empty and no session ran.
func TestTaskWithABadIDIsRefused(t *testing.T) {
	var logs proctest.Buffer
	f := start(t, simHost("w", ""), func(o *Options) { o.Log = slog.New(slog.NewTextHandler(&logs, nil)) })
	started := make(chan string, 1)
	sub, err := f.n.Bus.Conn.Subscribe(wire.EventSubject("w", "*", "session.started"), func(m *nats.Msg) { started <- m.Subject })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	data, _ := json.Marshal(&wire.Task{ID: "bad.id", Host: "w", Prompt: script(result)})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := f.n.Bus.JS.Publish(ctx, wire.TaskSubject("w"), data); err != nil {
		t.Fatal(err)
	}
	proctest.Within(t, 10*time.Second, func() error {
		if !strings.Contains(logs.String(), `task id \"bad.id\" is one token of NATS subjects`) {
			return fmt.Errorf("the node's log does not say why:\n%s", logs.String())
		}
		return queueEmpty(ctx, f)
	})
	if n := testutil.ToFloat64(f.n.Metrics.Tasks.WithLabelValues("w", "invalid")); n != 1 {
		t.Errorf("tasks counted invalid: %v; want 1", n)
	}
	select {
	case s := <-started:
		t.Fatalf("a session ran for the refused task: %s", s)
	default:
	}
}
