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

	"github.com/agentmux/agentmux/ask"
	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/decide"
	"github.com/agentmux/agentmux/internal/bustest"
	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/internal/routines"
	"github.com/agentmux/agentmux/metrics"
	"github.com/agentmux/agentmux/wire"
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
	nc    *nats.Conn
	asker *ask.Asker
	m     *metrics.Set
}

func start(t *testing.T, concurrency int, d decide.Decider) *fixture {
	t.Helper()
	f, system := open(t)
	f.member(t, system, "m1", concurrency, d)
	return f
}

// open starts a bus whose Asker counts into the fixture's metrics, and an actor system.
func open(t *testing.T) (*fixture, *actor.ActorSystem) {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	m := metrics.New()
	b := bustest.Open(t, "supervisor-test", log)
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return log }))
	t.Cleanup(system.Shutdown)
	return &fixture{nc: b.Conn, asker: bustest.Asker(t, b, ask.AskerConfig{Counters: m.AskCounters()}), m: m}, system
}

// member starts one member of supervisor "s" and waits until it is subscribed.
func (f *fixture) member(t *testing.T, system *actor.ActorSystem, name string, concurrency int, d decide.Decider) *actor.PID {
	t.Helper()
	group := routines.New()
	pid := system.Root.Spawn(Props(Config{Supervisor: &config.Supervisor{Name: "s", Concurrency: concurrency}, Decider: d, Conn: f.nc,
		Member: name, Routines: group, Metrics: f.m, Log: slog.New(slog.DiscardHandler)}))
	t.Cleanup(func() {
		_ = system.Root.StopFuture(pid).Wait()
		// Every decision and keep-alive goroutine ends with the actor.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := group.Stop(ctx); err != nil {
			t.Error(err)
		}
	})
	// The subscription is made in Started; wait until the server has it.
	proctest.Eventually(t, "the supervisor subscribed", func() bool {
		_, err := f.nc.Request(wire.AskSubject("s"), []byte("not json"), time.Second)
		return err == nil
	})
	return pid
}

// ask asks through the node's Asker, as an agent does, and waits for the first answer.
func (f *fixture) ask(id string, deadline time.Time) (*wire.Reply, error) {
	answers := make(chan *wire.Reply, 8)
	q := &wire.Ask{Session: "s1", Host: "w", Type: "question", ID: id, Text: "q"}
	if _, err := f.asker.Ask(wire.AskSubject("s"), q, nil, deadline, true, func(r *wire.Reply) { answers <- r }); err != nil {
		return nil, err
	}
	select {
	case r := <-answers:
		return r, nil
	case <-time.After(5 * time.Second):
		return nil, nats.ErrTimeout
	}
}

// askRaw publishes data as an ask, not through the Asker, and waits for the first
// answer (a message without a status header).
func (f *fixture) askRaw(data []byte, wait time.Duration) (*wire.Reply, error) {
	inbox := f.nc.NewInbox()
	sub, err := f.nc.SubscribeSync(inbox)
	if err != nil {
		return nil, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := f.nc.PublishRequest(wire.AskSubject("s"), inbox, data); err != nil {
		return nil, err
	}
	for until := time.Now().Add(wait); ; {
		m, err := sub.NextMsg(time.Until(until))
		if err != nil {
			return nil, nats.ErrTimeout
		}
		if m.Header.Get(wire.HeaderStatus) != "" {
			continue
		}
		return wire.DecodeReply(m.Data)
	}
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
	proctest.Eventually(t, "two decisions are in flight", func() bool { return g.now.Load() == 2 })
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
	// An ask of a node older than timeout_ms, its deadline past.
	data, _ := json.Marshal(&wire.Ask{ID: "late", Type: "question", Deadline: time.Now().Add(-time.Second).UnixMilli()})
	if _, err := f.askRaw(data, 300*time.Millisecond); err != nats.ErrTimeout {
		t.Fatalf("an expired ask got %v; want no reply at all", err)
	}
	if v := testutil.ToFloat64(f.m.Decisions.WithLabelValues("s", "expired")); v != 1 {
		t.Fatalf("expired = %v", v)
	}
}

func TestMalformedAskIsDeclined(t *testing.T) {
	f := start(t, 1, &gate{release: make(chan struct{})})
	r, err := f.askRaw([]byte("{broken"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if r.Kind != wire.ReplyCancelled || r.Reason == "" || r.Member != "m1" {
		t.Fatalf("reply %+v: want a cancelled reply from m1 that says why", r)
	}
}

func TestDeciderPastTheDeadlineDeclines(t *testing.T) {
	f := start(t, 1, &gate{release: make(chan struct{})}) // never released
	r, err := f.ask("q1", time.Now().Add(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if r.Kind != wire.ReplyCancelled || r.Reason != context.DeadlineExceeded.Error() {
		t.Fatalf("reply %+v: want cancelled with the deadline as the reason", r)
	}
}

// TestHeldAskIsKeptAlive: a member that takes longer than the asker's silence window
// keeps its ask alive, so the ask is decided once and never asked again.
func TestHeldAskIsKeptAlive(t *testing.T) {
	g := &gate{release: make(chan struct{})}
	f := start(t, 1, g)
	alive := make(chan struct{}, 64)
	sub, err := f.nc.Subscribe("_INBOX.>", func(m *nats.Msg) {
		if m.Header.Get(wire.HeaderStatus) == wire.StatusAlive {
			alive <- struct{}{}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	answers := make(chan *wire.Reply, 4)
	q := &wire.Ask{Session: "s1", Host: "w", Type: "question", ID: "slow", Text: "q"}
	if _, err := f.asker.Ask(wire.AskSubject("s"), q, nil, time.Now().Add(time.Minute), true, func(r *wire.Reply) { answers <- r }); err != nil {
		t.Fatal(err)
	}
	// Four keep-alives span more than the asker's silence window (ask.DefaultSilence).
	for range int(ask.DefaultSilence/wire.KeepAliveInterval) + 1 {
		select {
		case <-alive:
		case <-time.After(5 * time.Second):
			t.Fatal("the member sent no keep-alive for a held ask")
		}
	}
	g.release <- struct{}{}
	r := <-answers
	if string(r.Value) != `"ok slow"` || r.Member != "m1" {
		t.Fatalf("answer %+v", r)
	}
	if v := testutil.ToFloat64(f.m.AskRequests.WithLabelValues("reasked")); v != 0 {
		t.Fatalf("a kept-alive ask was asked again %v times", v)
	}
	if v := testutil.ToFloat64(f.m.Decisions.WithLabelValues("s", "decided")); v != 1 {
		t.Fatalf("decided %v times; want once", v)
	}
}

// TestStoppingMemberHandsItsAskOver: a member that stops while deciding lets go of the
// ask, and another member of the queue group answers it, long before the deadline.
func TestStoppingMemberHandsItsAskOver(t *testing.T) {
	f, system := open(t)
	gates := map[string]*gate{"m1": {release: make(chan struct{})}, "m2": {release: make(chan struct{})}}
	pids := map[string]*actor.PID{}
	for name, g := range gates {
		pids[name] = f.member(t, system, name, 4, g)
	}
	answers := make(chan *wire.Reply, 4)
	deadline := time.Now().Add(time.Minute)
	q := &wire.Ask{Session: "s1", Host: "w", Type: "question", ID: "q1", Text: "q"}
	if _, err := f.asker.Ask(wire.AskSubject("s"), q, nil, deadline, true, func(r *wire.Reply) { answers <- r }); err != nil {
		t.Fatal(err)
	}
	var holder, other string
	proctest.Eventually(t, "a member is deciding", func() bool {
		for name, g := range gates {
			if g.now.Load() == 1 {
				holder = name
			}
		}
		return holder != ""
	})
	other = map[string]string{"m1": "m2", "m2": "m1"}[holder]
	if err := system.Root.StopFuture(pids[holder]).Wait(); err != nil {
		t.Fatal(err)
	}
	proctest.Eventually(t, "the other member took the ask over", func() bool { return gates[other].now.Load() == 1 })
	gates[other].release <- struct{}{}
	r := <-answers
	if r.Member != other || string(r.Value) != `"ok q1"` {
		t.Fatalf("answer %+v; want the other member's (%s)", r, other)
	}
	// The stopped member's decision counts itself released when it returns, on its own
	// goroutine: maybe after the other member has answered.
	proctest.Eventually(t, "the stopped member's one ask counted released", func() bool {
		return testutil.ToFloat64(f.m.Decisions.WithLabelValues("s", "released")) == 1
	})
	if v := testutil.ToFloat64(f.m.AskRequests.WithLabelValues("reasked")); v != 1 {
		t.Fatalf("reasked = %v; want 1: the release asked the group again", v)
	}
}

// TestReaskToTheSameMemberIsDecidedOnce: an ask that reaches the member that already
// holds it (same reply subject) is acknowledged, not decided again.
func TestReaskToTheSameMemberIsDecidedOnce(t *testing.T) {
	g := &gate{release: make(chan struct{})}
	f := start(t, 4, g)
	inbox := f.nc.NewInbox()
	got := make(chan *nats.Msg, 16)
	sub, err := f.nc.Subscribe(inbox, func(m *nats.Msg) { got <- m })
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	data, _ := json.Marshal(&wire.Ask{Session: "s1", Host: "w", Type: "question", ID: "q1", Text: "q", Deadline: time.Now().Add(time.Minute).UnixMilli()})
	for range 2 {
		if err := f.nc.PublishRequest(wire.AskSubject("s"), inbox, data); err != nil {
			t.Fatal(err)
		}
	}
	acks := 0
	for acks < 2 {
		m := <-got
		if m.Header.Get(wire.HeaderStatus) == wire.StatusAck {
			acks++
		}
	}
	if g.now.Load() > 1 {
		t.Fatal("the same ask is being decided twice")
	}
	g.release <- struct{}{}
	answered := 0
	for answered == 0 {
		if m := <-got; m.Header.Get(wire.HeaderStatus) == "" {
			answered++
		}
	}
	if v := testutil.ToFloat64(f.m.Decisions.WithLabelValues("s", "decided")); v != 1 {
		t.Fatalf("decided %v times; want once", v)
	}
}
