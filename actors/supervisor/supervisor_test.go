package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/decide"
	"github.com/agentmux/agentmux/metrics"
)

// gate is a Decider that holds every decision until released, counting how many it
// holds at once.
type gate struct {
	release chan struct{}
	now     atomic.Int32
	max     atomic.Int32
}

func (g *gate) Decide(ctx context.Context, r *decide.Request) (decide.Decision, error) {
	n := g.now.Add(1)
	defer g.now.Add(-1)
	for {
		m := g.max.Load()
		if n <= m || g.max.CompareAndSwap(m, n) {
			break
		}
	}
	select {
	case <-g.release:
	case <-ctx.Done():
		return decide.Decision{}, ctx.Err()
	}
	return decide.Decision{Value: json.RawMessage(`"ok ` + r.ID + `"`), Decider: "gate"}, nil
}

type fixture struct {
	nc *nats.Conn
	m  *metrics.Set
}

func start(t *testing.T, concurrency int, d decide.Decider) *fixture {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	b, err := bus.Open(context.Background(), bus.Config{Listen: "127.0.0.1:0", Name: "supervisor-test"}, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return log }))
	m := metrics.New()
	pid := system.Root.Spawn(Props(Config{Supervisor: &config.Supervisor{Name: "s", Concurrency: concurrency}, Decider: d, Conn: b.Conn, Metrics: m, Log: log}))
	t.Cleanup(func() {
		_ = system.Root.StopFuture(pid).Wait()
		system.Shutdown()
	})
	// The subscription is made in Started; wait until the server has it.
	f := &fixture{nc: b.Conn, m: m}
	eventually(t, "the supervisor subscribed", func() bool {
		_, err := b.Conn.Request(bus.AskSubject("s"), []byte("not json"), time.Second)
		return err == nil
	})
	return f
}

// eventually polls cond until it holds, failing the test after five seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(5 * time.Second)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}

func (f *fixture) ask(id string, deadline time.Time) (*bus.Reply, error) {
	data, _ := json.Marshal(&bus.Ask{Session: "s1", Host: "w", Type: "question", ID: id, Text: "q", Deadline: deadline.UnixMilli()})
	m, err := f.nc.Request(bus.AskSubject("s"), data, 5*time.Second)
	if err != nil {
		return nil, err
	}
	var r bus.Reply
	return &r, json.Unmarshal(m.Data, &r)
}

func TestConcurrencyIsBounded(t *testing.T) {
	g := &gate{release: make(chan struct{})}
	f := start(t, 2, g)
	const asks = 6
	var wg sync.WaitGroup
	errs := make(chan error, asks)
	for i := range asks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("q%d", i)
			r, err := f.ask(id, time.Now().Add(time.Minute))
			if err == nil && string(r.Value) != `"ok `+id+`"` {
				err = fmt.Errorf("%s answered %s", id, r.Value)
			}
			errs <- err
		}()
	}
	eventually(t, "two decisions are in flight", func() bool { return g.now.Load() == 2 })
	for range asks {
		g.release <- struct{}{}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if m := g.max.Load(); m != 2 {
		t.Fatalf("at most %d decisions ran at once; want exactly the concurrency, 2", m)
	}
	if v := testutil.ToFloat64(f.m.Decisions.WithLabelValues("s", "decided")); v != asks {
		t.Fatalf("decisions = %v", v)
	}
}

func TestExpiredAskIsDropped(t *testing.T) {
	f := start(t, 1, &gate{release: make(chan struct{})})
	data, _ := json.Marshal(&bus.Ask{ID: "late", Type: "question", Deadline: time.Now().Add(-time.Second).UnixMilli()})
	if _, err := f.nc.Request(bus.AskSubject("s"), data, 300*time.Millisecond); err != nats.ErrTimeout {
		t.Fatalf("an expired ask got %v; want no reply at all", err)
	}
	if v := testutil.ToFloat64(f.m.Decisions.WithLabelValues("s", "expired")); v != 1 {
		t.Fatalf("expired = %v", v)
	}
}

func TestMalformedAskIsDeclined(t *testing.T) {
	f := start(t, 1, &gate{release: make(chan struct{})})
	m, err := f.nc.Request(bus.AskSubject("s"), []byte("{broken"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var r bus.Reply
	if err := json.Unmarshal(m.Data, &r); err != nil || !r.Cancelled || r.Reason == "" {
		t.Fatalf("reply %s: want a cancelled reply that says why", m.Data)
	}
}

func TestDeciderPastTheDeadlineDeclines(t *testing.T) {
	f := start(t, 1, &gate{release: make(chan struct{})}) // never released
	r, err := f.ask("q1", time.Now().Add(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Cancelled || r.Reason != context.DeadlineExceeded.Error() {
		t.Fatalf("reply %+v: want cancelled with the deadline as the reason", r)
	}
}
