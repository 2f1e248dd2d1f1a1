package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/nats-io/nuid"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentmux/agentmux/ask"
	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/internal/bustest"
	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/metrics"
)

// The agents gauge is what an operator sees of the lifecycle, so these tests follow the
// phases through it: an Agent actor in a real actor system, under a parent that does
// what the router does (stops it on AgentExited), on a real bus.

// parent spawns the agent and passes on what it reports.
type parent struct {
	props   *actor.Props
	agent   chan *actor.PID
	ended   chan *SessionEnded
	exited  chan *AgentExited
	stopped chan struct{} // the agent actor has stopped
}

func (p *parent) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		p.agent <- c.Spawn(p.props)
	case *SessionEnded:
		p.ended <- m
	case *AgentExited:
		p.exited <- m
		c.Stop(m.PID)
	case *actor.Terminated:
		close(p.stopped)
	}
}

// errorLog keeps what the agent logs at level error: a lifecycle move refused is one.
type errorLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *errorLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *errorLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// puppet is an in-process agent the test drives line by line.
type puppet struct {
	in   chan string // lines read from stdin; closed at stdin's end
	out  chan string // lines to write to stdout
	exit chan error  // returns with this error
}

func newPuppet() *puppet {
	return &puppet{in: make(chan string, 16), out: make(chan string, 16), exit: make(chan error, 1)}
}

func (p *puppet) run(stdin io.Reader, stdout io.Writer) error {
	go func() {
		sc := bufio.NewScanner(stdin)
		for sc.Scan() {
			p.in <- sc.Text()
		}
		close(p.in)
	}()
	for {
		select {
		case line := <-p.out:
			if _, err := io.WriteString(stdout, line+"\n"); err != nil {
				return err
			}
		case err := <-p.exit:
			return err
		}
	}
}

// read returns the type of the next line the agent read.
func (p *puppet) read(t *testing.T) string {
	t.Helper()
	select {
	case line, ok := <-p.in:
		if !ok {
			t.Fatal("the agent's stdin closed; want a line")
		}
		var m struct{ Type string }
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("the agent read %q: %v", line, err)
		}
		return m.Type
	case <-time.After(10 * time.Second):
		t.Fatal("the agent read nothing")
	}
	return ""
}

// stdinClosed waits until the agent's stdin is at its end: the stop ladder's first step.
func (p *puppet) stdinClosed(t *testing.T) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-p.in:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("the agent's stdin was never closed")
		}
	}
}

type lifecycle struct {
	t       *testing.T
	host    string
	m       *metrics.Set
	system  *actor.ActorSystem
	agent   *actor.PID
	ended   chan *SessionEnded
	exited  chan *AgentExited
	stopped chan struct{}
	errors  *errorLog
}

// spawnAgent starts an Agent for the manifest's host "w" (in process when run is set).
func spawnAgent(t *testing.T, manifest string, run InProc) *lifecycle {
	t.Helper()
	m, err := config.Parse(filepath.Join(t.TempDir(), "m.toml"), []byte(manifest))
	if err != nil {
		t.Fatalf("manifest: %v", err)
	}
	errs := &errorLog{}
	log := slog.New(slog.NewTextHandler(errs, &slog.HandlerOptions{Level: slog.LevelError}))
	b := bustest.Open(t, "agent-test", log)
	quiet := slog.New(slog.DiscardHandler)
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	t.Cleanup(system.Shutdown)
	l := &lifecycle{t: t, host: "w", m: metrics.New(), system: system, errors: errs,
		ended: make(chan *SessionEnded, 16), exited: make(chan *AgentExited, 1), stopped: make(chan struct{})}
	agents := make(chan *actor.PID, 1)
	env := &Env{Node: "n1", Conn: b.Conn, Asker: bustest.Asker(t, b, ask.AskerConfig{}), Metrics: l.m, Log: log, DrainDelay: 200 * time.Millisecond}
	props := Props(Config{Env: env, Host: m.Hosts["w"], InProc: run})
	system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
		return &parent{props: props, agent: agents, ended: l.ended, exited: l.exited, stopped: l.stopped}
	}))
	l.agent = <-agents
	return l
}

// state waits until the agents gauge counts this process in state want ("" for none).
func (l *lifecycle) state(want string) {
	l.t.Helper()
	// A gauge has no change to wait on: read it until the deadline.
	proctest.Within(l.t, 10*time.Second, func() error {
		var now []string
		for _, s := range []string{"starting", "idle", "busy", "stopping"} {
			switch v := testutil.ToFloat64(l.m.Agents.WithLabelValues(l.host, s)); v {
			case 0:
			case 1:
				now = append(now, s)
			default:
				l.t.Fatalf("agents{state=%q} = %v; one process is counted once", s, v)
			}
		}
		if len(now) <= 1 && strings.Join(now, "") == want {
			return nil
		}
		return fmt.Errorf("the process is counted in %q; want %q", now, want)
	})
}

func (l *lifecycle) start(id string) {
	l.system.Root.Send(l.agent, &StartSession{Session: id, Prompt: "work", Started: time.Now()})
}

func (l *lifecycle) sessionEnded() *SessionEnded {
	l.t.Helper()
	select {
	case m := <-l.ended:
		return m
	case <-time.After(10 * time.Second):
		l.t.Fatal("no session ended")
	}
	return nil
}

// gone waits for AgentExited and for the actor to stop, and checks that the process is
// no longer counted and that nothing was logged as an error on the way.
func (l *lifecycle) gone() *AgentExited {
	l.t.Helper()
	var m *AgentExited
	select {
	case m = <-l.exited:
	case <-time.After(10 * time.Second):
		l.t.Fatal("the agent never reported its process gone")
	}
	select {
	case <-l.stopped:
	case <-time.After(10 * time.Second):
		l.t.Fatal("the agent actor did not stop after AgentExited")
	}
	l.state("")
	if e := l.errors.String(); e != "" {
		l.t.Fatalf("the agent logged errors:\n%s", e)
	}
	return m
}

// exitedAs checks that the process's exit was counted once, for reason.
func (l *lifecycle) exitedAs(reason string) {
	l.t.Helper()
	if v := testutil.ToFloat64(l.m.AgentExits.WithLabelValues(l.host, reason)); v != 1 {
		l.t.Fatalf("agent_exits_total{reason=%q} = %v; want 1", reason, v)
	}
}

const withInit = "[hosts.w]\ncommand = \"in-process\"\nparams = { mode = \"test\" }\ninit_timeout = \"2s\"\n"

// TestLifecycleOfAReusedProcess walks one process through every phase a healthy one
// passes: starting (init written, a session already waiting), idle, busy, idle again
// for a second session, stopping, exited and gone.
func TestLifecycleOfAReusedProcess(t *testing.T) {
	p := newPuppet()
	l := spawnAgent(t, withInit, p.run)
	if typ := p.read(t); typ != "init" {
		t.Fatalf("first line %q; want init", typ)
	}
	l.state("starting")
	l.start("s-1") // waits for init_ack
	p.out <- `{"type":"init_ack","capabilities":[]}`
	if typ := p.read(t); typ != "prompt" {
		t.Fatalf("after init_ack the agent read %q; want the waiting session's prompt", typ)
	}
	l.state("busy")

	l.start("s-other") // one session at a time
	if e := l.sessionEnded(); e.Result.Session != "s-other" || e.Result.Error != "agent process is not available" || !e.Result.Retryable || e.Reusable {
		t.Fatalf("a session offered to a busy process ended %+v", e.Result)
	}
	p.out <- `{"type":"result","text":"one"}`
	if e := l.sessionEnded(); e.Result.Session != "s-1" || !e.Result.OK || !e.Reusable {
		t.Fatalf("first session ended %+v reusable=%v", e.Result, e.Reusable)
	}
	l.state("idle")

	l.start("s-2")
	if typ := p.read(t); typ != "prompt" {
		t.Fatalf("second session: the agent read %q", typ)
	}
	l.state("busy")
	p.out <- `{"type":"result","text":"two"}`
	if e := l.sessionEnded(); e.Result.Session != "s-2" || !e.Result.OK || !e.Reusable {
		t.Fatalf("second session ended %+v", e.Result)
	}
	l.state("idle")

	l.system.Root.Send(l.agent, &Shutdown{Reason: "test"})
	p.stdinClosed(t)
	l.state("stopping") // the in-process agent ignores its stdin's end until told
	p.exit <- nil
	l.gone()
	if v := testutil.ToFloat64(l.m.AgentStarts.WithLabelValues(l.host)); v != 1 {
		t.Fatalf("agent starts = %v; want 1 process for both sessions", v)
	}
	l.exitedAs("exit_ok")
}

// TestLifecycleProcessDiesInASession: busy → exited → gone, the session ending with the
// process's error.
func TestLifecycleProcessDiesInASession(t *testing.T) {
	p := newPuppet()
	l := spawnAgent(t, withInit, p.run)
	p.read(t)
	p.out <- `{"type":"init_ack","capabilities":[]}`
	l.state("idle")
	l.start("s-1")
	p.read(t)
	p.exit <- errors.New("segfault")
	e := l.sessionEnded()
	if want := "agent exited without result (segfault)"; e.Result.OK || e.Result.Error != want || e.Reusable {
		t.Fatalf("session ended %+v; want %q", e.Result, want)
	}
	l.gone()
	l.exitedAs("exit_error")
}

// TestLifecycleProcessDiesInitializing: initializing → exited → gone; the session that
// waited for it ends saying so.
func TestLifecycleProcessDiesInitializing(t *testing.T) {
	p := newPuppet()
	l := spawnAgent(t, withInit, p.run)
	p.read(t)
	l.start("s-1")
	p.exit <- nil
	e := l.sessionEnded()
	if want := "host 'w' exited during initialization (exit status 0)"; e.Result.Error != want {
		t.Fatalf("waiting session ended %q; want %q", e.Result.Error, want)
	}
	l.gone()
}

// TestDiedInInitSaysWhatItPrinted: a real process that reads its init and exits,
// saying why on stderr (a bad key, a missing model): the session waiting for it ends
// with that, not only its exit status.
func TestDiedInInitSaysWhatItPrinted(t *testing.T) {
	l := spawnAgent(t, "[hosts.w]\ncommand = \"sh\"\nargs = [\"-c\", \"read line; echo 'init: the API key is not set' >&2; exit 3\"]\n"+
		"params = { mode = \"test\" }\ninit_timeout = \"10s\"\n", nil)
	l.start("s-1")
	e := l.sessionEnded()
	if want := "host 'w' exited during initialization (exit status 3); last stderr: init: the API key is not set"; e.Result.Error != want {
		t.Fatalf("waiting session ended %q; want %q", e.Result.Error, want)
	}
	l.gone()
}

// TestLifecycleInitNeverAcknowledged: initializing → stopping on the init timeout.
func TestLifecycleInitNeverAcknowledged(t *testing.T) {
	p := newPuppet()
	l := spawnAgent(t, strings.Replace(withInit, `"2s"`, `"200ms"`, 1), p.run)
	p.read(t)
	l.start("s-1")
	e := l.sessionEnded()
	if want := "host 'w' did not acknowledge initialization"; e.Result.Error != want {
		t.Fatalf("waiting session ended %q; want %q", e.Result.Error, want)
	}
	p.stdinClosed(t)
	l.state("stopping")
	p.exit <- nil
	l.gone()
}

// TestLifecycleOneShotStoppedBeforeItsSession: a one-shot dialect's process starts with
// its session; stopped before one came, the agent is gone without ever starting one.
func TestLifecycleOneShotStoppedBeforeItsSession(t *testing.T) {
	l := spawnAgent(t, "[hosts.w]\ncommand = \"claude\"\ndialect = \"claude-code\"\n", nil)
	l.state("starting")
	l.system.Root.Send(l.agent, &Shutdown{Reason: "test"})
	if m := l.gone(); m.Reason != "stopped before its process started" {
		t.Fatalf("gone with reason %q", m.Reason)
	}
	if v := testutil.ToFloat64(l.m.AgentStarts.WithLabelValues(l.host)); v != 0 {
		t.Fatalf("agent starts = %v; want none", v)
	}
}

// TestLifecycleStopLadderKillsAProcessThatHoldsOn: a real process that ignores its
// stdin's end and SIGTERM goes stopping → exited → gone by SIGKILL after stop_grace,
// and leaves no process behind.
func TestLifecycleStopLadderKillsAProcessThatHoldsOn(t *testing.T) {
	mark := nuid.Next()
	script := `trap "" TERM; echo '{"type":"init_ack","capabilities":[]}'; while read -r line; do :; done; exec sleep 1000`
	l := spawnAgent(t, fmt.Sprintf("[hosts.w]\ncommand = \"/bin/sh\"\nargs = [\"-c\", %q]\nparams = { mode = \"test\" }\nstop_grace = \"300ms\"\nenv = { %s = %q }\n",
		script, proctest.Env, mark), nil)
	l.state("idle")
	if pids := proctest.Marked(mark); len(pids) == 0 {
		t.Fatal("no agent process runs")
	}
	l.system.Root.Send(l.agent, &Shutdown{Reason: "test"})
	l.state("stopping")
	l.gone()
	l.exitedAs("killed")
	if left := proctest.Marked(mark); len(left) > 0 {
		t.Fatalf("processes left after the agent was gone: %v", left)
	}
}

// TestLifecycleMoves: the table's shape: every phase but gone can end, gone is final,
// and a refused move leaves the phase and the gauge as they were.
func TestLifecycleMoves(t *testing.T) {
	for p := phaseNew; p < phaseGone; p++ {
		if !p.canMove(phaseGone) {
			t.Errorf("%v cannot go to gone", p)
		}
	}
	for p := phaseNew; p <= phaseGone; p++ {
		if phaseGone.canMove(p) {
			t.Errorf("gone can move to %v", p)
		}
	}
	m := metrics.New()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a := &Agent{cfg: Config{Env: &Env{Metrics: m}}, host: &config.Host{Name: "w"}, log: log, shared: NewShared("w", m, log)}
	if !a.to(phaseStarting) || !a.to(phaseIdle) {
		t.Fatal("new → starting → idle refused")
	}
	if a.to(phaseInitializing) || a.phase != phaseIdle {
		t.Fatalf("idle → initializing made; phase %v", a.phase)
	}
	if v := testutil.ToFloat64(m.Agents.WithLabelValues("w", "idle")); v != 1 {
		t.Fatalf("agents{idle} = %v", v)
	}
	if v := testutil.ToFloat64(m.Agents.WithLabelValues("w", "starting")); v != 0 {
		t.Fatalf("agents{starting} = %v", v)
	}
}
