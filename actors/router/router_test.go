package router

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/agentmux/agentmux/actors/agent"
	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/internal/bustest"
	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/internal/routines"
	"github.com/agentmux/agentmux/metrics"
	"github.com/agentmux/agentmux/wire"
)

func TestLifecycleMoves(t *testing.T) {
	for from := phaseTaking; from <= phaseStopped; from++ {
		for to := phaseTaking; to <= phaseStopped; to++ {
			want := from == phaseTaking && (to == phaseDraining || to == phaseStopping) ||
				from == phaseDraining && (to == phaseTaking || to == phaseStopping) || from == phaseStopping && to == phaseStopped
			if got := from.canMove(to); got != want {
				t.Errorf("%s → %s allowed %v; want %v", from, to, got, want)
			}
		}
	}
}

// TestHandNeverWaits: a reply channel with no room loses what it is sent, saying so,
// rather than stall the router; a nil one wants nothing.
func TestHandNeverWaits(t *testing.T) {
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	full := make(chan int, 1)
	full <- 1
	done := make(chan struct{})
	go func() {
		defer close(done)
		hand(log, full, 2)
		hand[int](log, nil, 3)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("hand waited on a full channel")
	}
	if !strings.Contains(logged.String(), "a reply channel is full") {
		t.Fatalf("the drop was not logged: %q", logged.String())
	}
	room := make(chan int, 1)
	hand(log, room, 4)
	if v := <-room; v != 4 {
		t.Fatalf("got %d; want 4", v)
	}
}

// gated is an in-process agent whose sessions each wait until the gate opens, or its
// stdin ends (the router stopping it), then end ok.
type gated struct {
	gate    chan struct{}
	mu      sync.Mutex
	prompts int
}

func (g *gated) run(stdin io.Reader, stdout io.Writer) error {
	lines := make(chan struct{})
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdin)
		for sc.Scan() {
			lines <- struct{}{}
		}
	}()
	for range lines {
		g.mu.Lock()
		g.prompts++
		g.mu.Unlock()
		select {
		case <-g.gate:
		case _, open := <-lines:
			if !open {
				return nil
			}
		}
		if _, err := io.WriteString(stdout, `{"type":"result","text":"done"}`+"\n"); err != nil {
			return err
		}
	}
	return nil
}

type fixture struct {
	system  *actor.ActorSystem
	router  *actor.PID
	stopped chan struct{}
	agent   *gated
}

// start runs a Router for host w, whose pool holds two in-process agents, with no
// work-queue intake: sessions come by Submit.
func start(t *testing.T) *fixture {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	m, err := config.Parse("m.toml", []byte("[hosts.w]\ncommand = \"unused\"\npool = 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	b := bustest.Open(t, "router-test", log)
	f := &fixture{stopped: make(chan struct{}), agent: &gated{gate: make(chan struct{})}}
	f.system = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return log }))
	group := routines.New()
	t.Cleanup(func() {
		_ = f.system.Root.StopFuture(f.router).Wait()
		_ = group.Stop(context.Background())
		f.system.Shutdown()
	})
	f.router = f.system.Root.Spawn(Props(Config{Manifest: m, Env: &agent.Env{Node: "n1", Conn: b.Conn, Metrics: metrics.New(), Log: log, Routines: group},
		Stopped: f.stopped, InProc: map[string]agent.InProc{"w": f.agent.run}}))
	return f
}

func (f *fixture) submit(session string) chan *agent.Result {
	reply := make(chan *agent.Result, 1)
	f.system.Root.Send(f.router, &Submit{Host: "w", Start: &agent.StartSession{Session: session, Prompt: "work", Reply: reply}})
	return reply
}

// stats are the router's figures, as the node's heartbeat reads them.
func (f *fixture) stats(t *testing.T) *Stats {
	t.Helper()
	res, err := f.system.Root.RequestFuture(f.router, &StatsRequest{}, 5*time.Second).Result()
	if err != nil {
		t.Fatalf("the router did not answer: %v", err)
	}
	return res.(*Stats)
}

// host is the router's figures for host w.
func (f *fixture) host(t *testing.T) wire.HostInfo {
	t.Helper()
	return f.stats(t).Hosts[0]
}

// running waits until host w has busy sessions running and queued waiting.
func (f *fixture) running(t *testing.T, busy, queued int) {
	t.Helper()
	proctest.Eventually(t, fmt.Sprintf("%d sessions run and %d wait", busy, queued), func() bool {
		h := f.host(t)
		return h.Busy == busy && h.Queued == queued
	})
}

func result(t *testing.T, reply chan *agent.Result) *agent.Result {
	t.Helper()
	select {
	case r := <-reply:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no result")
		return nil
	}
}

// TestPoolQueuesBeyondItsSize: a pool of two runs two sessions at once and queues the
// rest; each queued one runs as a process frees, on a process used again.
func TestPoolQueuesBeyondItsSize(t *testing.T) {
	f := start(t)
	var replies []chan *agent.Result
	for _, s := range []string{"s1", "s2", "s3", "s4"} {
		replies = append(replies, f.submit(s))
	}
	f.running(t, 2, 2)
	close(f.agent.gate)
	for i, reply := range replies {
		if r := result(t, reply); !r.OK || r.Text != "done" {
			t.Fatalf("session %d: %+v", i+1, r)
		}
	}
	if h := f.host(t); h.Busy != 0 || h.Queued != 0 || h.Idle != 2 {
		t.Fatalf("host %+v after every session; want its two processes idle", h)
	}
	f.agent.mu.Lock()
	defer f.agent.mu.Unlock()
	if f.agent.prompts != 4 {
		t.Fatalf("the agents read %d prompts; want 4", f.agent.prompts)
	}
}

// TestShutdownEndsQueuedSessionsAndStopsEveryProcess: a shutdown ends the queued
// sessions at once, saying why, stops the running ones' processes, and closes Stopped
// once none is left; a drain asked afterwards says the node is already stopping.
func TestShutdownEndsQueuedSessionsAndStopsEveryProcess(t *testing.T) {
	f := start(t)
	var replies []chan *agent.Result
	for _, s := range []string{"s1", "s2", "s3"} {
		replies = append(replies, f.submit(s))
	}
	f.running(t, 2, 1)
	f.system.Root.Send(f.router, &Shutdown{Reason: "test"})
	if r := result(t, replies[2]); r.OK || r.Error != ErrShuttingDown.Error() {
		t.Fatalf("the queued session: %+v; want it ended, shutting down", r)
	}
	for _, reply := range replies[:2] {
		if r := result(t, reply); r.OK {
			t.Fatalf("a running session ended ok after the shutdown stopped its process: %+v", r)
		}
	}
	select {
	case <-f.stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Stopped was not closed")
	}
	res, err := f.system.Root.RequestFuture(f.router, &Drain{Grace: time.Second}, 5*time.Second).Result()
	if d, ok := res.(*wire.DrainReply); err != nil || !ok || d.OK || !strings.Contains(d.Effect, "already stopping") {
		t.Fatalf("a drain after the shutdown: %+v, %v", res, err)
	}
	if r := result(t, f.submit("late")); r.OK || r.Error != ErrShuttingDown.Error() {
		t.Fatalf("a session submitted after the shutdown: %+v", r)
	}
}

// TestDrainLetsRunningSessionsFinish: a drain takes no more work from the queue, lets
// the running sessions finish within the grace, and then stops the router.
func TestDrainLetsRunningSessionsFinish(t *testing.T) {
	f := start(t)
	reply := f.submit("s1")
	f.running(t, 1, 0)
	res, err := f.system.Root.RequestFuture(f.router, &Drain{Grace: time.Minute}, 5*time.Second).Result()
	if d, ok := res.(*wire.DrainReply); err != nil || !ok || !d.OK || d.Running != 1 {
		t.Fatalf("drain: %+v, %v; want one session left to finish", res, err)
	}
	if !f.stats(t).Draining {
		t.Fatal("the router's figures do not say it drains")
	}
	close(f.agent.gate)
	if r := result(t, reply); !r.OK {
		t.Fatalf("the running session, let finish: %+v", r)
	}
	select {
	case <-f.stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the drained router did not stop once its last session ended")
	}
}

// TestAFullReplyChannelDoesNotStallTheRouter: a pipeline run or a session whose sender
// gave no room for its reply loses the reply (logged), and the router goes on.
func TestAFullReplyChannelDoesNotStallTheRouter(t *testing.T) {
	f := start(t)
	close(f.agent.gate)
	f.system.Root.Send(f.router, &RunPipeline{Pipeline: "nowhere", ID: "p-1", Reply: make(chan *wire.PipelineRun)})
	f.system.Root.Send(f.router, &Submit{Host: "w", Start: &agent.StartSession{Session: "s1", Prompt: "work", Reply: make(chan *agent.Result)}})
	if r := result(t, f.submit("s2")); !r.OK {
		t.Fatalf("the next session: %+v", r)
	}
	proctest.Eventually(t, "both sessions ended", func() bool { h := f.host(t); return h.Busy == 0 && h.Queued == 0 })
}
