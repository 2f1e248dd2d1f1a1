package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/ask"
	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/wire"
)

// fleet is three NATS servers in a JetStream cluster (`agentmux up --no-hosts
// --no-supervisors` with [nats.cluster]) and a manifest every other node of the fleet
// shares, all real processes on loopback. It is secured as in production: the routes
// authenticate, and every node and the test connect as the node user "fleet".
type fleet struct {
	dir      string
	servers  []*proc
	names    []string // server names, in order
	configs  []string // server manifests, in order
	urls     []string // client URLs, in order
	manifest string   // the fleet's manifest: url names the three servers
	header   string   // its [nats] and [metrics], before the body
}

// startFleet starts the three servers and writes the fleet manifest with body (hosts,
// supervisors, routes) after its [nats] table.
func startFleet(t testing.TB, body string) *fleet {
	t.Helper()
	return startFleetOn(t, "127.0.0.1", body)
}

// startFleetOn is startFleet with the servers' client listeners on host.
func startFleetOn(t testing.TB, host, body string) *fleet {
	t.Helper()
	f := &fleet{dir: t.TempDir()}
	client, cluster := []int{proctest.FreePort(t), proctest.FreePort(t), proctest.FreePort(t)}, []int{proctest.FreePort(t), proctest.FreePort(t), proctest.FreePort(t)}
	for i := range 3 {
		var routes []string
		for j := range 3 {
			if j != i {
				routes = append(routes, fmt.Sprintf("%q", fmt.Sprintf("nats://127.0.0.1:%d", cluster[j])))
			}
		}
		name := fmt.Sprintf("nats%d", i+1)
		path := f.write(t, name+".toml", fmt.Sprintf(`[nats]
listen = "%s:%d"
store_dir = %q
server_name = %q
sync_interval = "always"
[nats.cluster]
name = "fleet"
listen = "127.0.0.1:%d"
routes = [%s]
user = "route"
password_env = "AGENTMUX_TEST_ROUTE_PASSWORD"
[[nats.users]]
name = "fleet"
password_env = "AGENTMUX_TEST_FLEET_PASSWORD"
role = "node"
[metrics]
addr = "127.0.0.1:0"
# A manifest needs something to run; servers run it with --no-hosts.
[hosts.unused]
command = "true"
`, host, client[i], filepath.Join(f.dir, name), name, cluster[i], strings.Join(routes, ", ")))
		f.configs = append(f.configs, path)
		f.names = append(f.names, name)
		f.servers = append(f.servers, f.server(t, i))
		f.urls = append(f.urls, fmt.Sprintf("nats://%s:%d", host, client[i]))
	}
	for i, s := range f.servers {
		// A forming cluster on a loaded machine can take most of the node's own minute
		// to take the streams.
		untilWithin(t, f.names[i]+" up", s.stderr, "node up", 90*time.Second)
		if !strings.Contains(s.stderr.String(), "replicas=3") {
			t.Fatalf("%s declared its streams without 3 replicas:\n%s", f.names[i], s.stderr)
		}
	}
	f.header = fmt.Sprintf("[nats]\nurl = %q\nuser = \"fleet\"\npassword_env = \"AGENTMUX_TEST_FLEET_PASSWORD\"\n[metrics]\naddr = \"127.0.0.1:0\"\n", strings.Join(f.urls, ","))
	f.manifest = f.write(t, "fleet.toml", f.header+body)
	return f
}

// server starts (or restarts, on its store) the i-th NATS server.
func (f *fleet) server(t testing.TB, i int) *proc {
	return runtimeProc(t, "up", "-c", f.configs[i], "--name", f.names[i], "--no-hosts", "--no-supervisors", "--log", "info")
}

func (f *fleet) write(t testing.TB, name, text string) string {
	t.Helper()
	path := filepath.Join(f.dir, name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// node starts `agentmux up` on the fleet's manifest with role flags.
func (f *fleet) node(t testing.TB, name string, flags ...string) *proc {
	t.Helper()
	return f.nodeOn(t, f.manifest, name, flags...)
}

// nodeWith starts `agentmux up` on a manifest of its own: the fleet's connection, then
// body.
func (f *fleet) nodeWith(t testing.TB, name, body string) *proc {
	t.Helper()
	return f.nodeOn(t, f.write(t, name+".toml", f.header+body), name)
}

func (f *fleet) nodeOn(t testing.TB, manifest, name string, flags ...string) *proc {
	t.Helper()
	p := runtimeProc(t, append([]string{"up", "-c", manifest, "--name", name, "--log", "info"}, flags...)...)
	// Within the time a node gives the cluster itself: on 2 loaded cores, with the rest
	// of the suite beside it, a node on a cluster has taken more than 20 s to come up.
	untilWithin(t, name+" up", p.stderr, "node up", time.Minute)
	return p
}

// conn is a client connection to the fleet, as the CLI makes one.
func (f *fleet) conn(t testing.TB) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	id := bus.Identity{User: "fleet", Password: os.Getenv("AGENTMUX_TEST_FLEET_PASSWORD")}
	nc, err := bus.Connect(bus.Client{URL: strings.Join(f.urls, ","), Name: "fleet-test", Identity: id}, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// submit queues tasks as `agentmux submit` does, all at once from the test's connection.
func submitTasks(t testing.TB, js jetstream.JetStream, host, prompt string, ids ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, id := range ids {
		data, _ := json.Marshal(&wire.Task{ID: id, Host: host, Prompt: prompt})
		if _, err := js.Publish(ctx, wire.TaskSubjectBy(host, "fleet"), data, jetstream.WithMsgID(id), jetstream.WithRetryAttempts(20)); err != nil {
			t.Fatalf("queue task %s: %v", id, err)
		}
	}
}

// events decodes every event on subject into a channel, until the test ends.
func events[T any](t testing.TB, nc *nats.Conn, subject string) <-chan T {
	t.Helper()
	out := make(chan T, 1024)
	sub, err := nc.Subscribe(subject, func(m *nats.Msg) {
		var v T
		if json.Unmarshal(m.Data, &v) == nil {
			select {
			case out <- v:
			default: // nobody reads this many: the test looks at the first ones only
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return out
}

// kill sends SIGKILL and waits for the process to be gone.
func kill(t testing.TB, p *proc) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done
}

// forgotten waits until every server of the fleet has dropped node's subscriptions, as
// the cluster does when it reads the killed node's connection closed. Until then a
// request a server hands to the dead node's queue subscription is lost; on a loaded
// machine a server can take a moment to get there.
func (f *fleet) forgotten(t testing.TB, node string) {
	t.Helper()
	id := bus.Identity{User: "fleet", Password: os.Getenv("AGENTMUX_TEST_FLEET_PASSWORD")}
	for i, url := range f.urls {
		nc, err := bus.Connect(bus.Client{URL: url, Name: "fleet-test-" + f.names[i], Identity: id})
		if err != nil {
			t.Fatal(err)
		}
		proctest.EventuallyWithin(t, 30*time.Second, f.names[i]+" forgets node "+node, func() bool {
			_, err := nc.Request(wire.CtlSubject(node, "list"), nil, time.Second)
			return errors.Is(err, nats.ErrNoResponders)
		})
		nc.Close()
	}
}

// auditRecords reads every audit record of the fleet, by sequence; it fails the test
// when the stream cannot be read within 45 s (a server just killed may have led it, and
// on a loaded machine the election takes its time).
func auditRecords(t testing.TB, js jetstream.JetStream) []wire.AuditRecord {
	t.Helper()
	var out []wire.AuditRecord
	var err error
	proctest.EventuallyWithin(t, 45*time.Second, "the audit stream is readable", func() bool {
		out, err = readFleetAudit(js)
		return err == nil
	})
	return out
}

func readFleetAudit(js jetstream.JetStream) ([]wire.AuditRecord, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, wire.AuditStream)
	if err != nil {
		return nil, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return nil, err
	}
	var out []wire.AuditRecord
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			return nil, fmt.Errorf("audit record %d: %w", seq, err)
		}
		var r wire.AuditRecord
		if err := json.Unmarshal(m.Data, &r); err != nil {
			return nil, fmt.Errorf("audit record %d: %w", seq, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// slowPolicy is a command supervisor that notes which node runs it (the parent of its
// parent, the shim), then takes its time to approve.
func slowPolicy(t *testing.T, dir string, think time.Duration) string {
	t.Helper()
	// The deciders' pids go to a file of its own, which the supervisor's sandbox lets
	// it write (dir holds the nodes' stores, which it may not touch).
	deciders := filepath.Join(dir, "deciders")
	if err := os.WriteFile(deciders, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`import os, sys, time
node = open("/proc/%%d/stat" %% os.getppid()).read().rsplit(")", 1)[1].split()[1]
open(%q, "a").write(node + "\n")
sys.stdin.readline()
time.sleep(%g)
print('{"value": "yes", "reason": "policy checked"}')
`, deciders, think.Seconds())
	return fmt.Sprintf("[supervisors.policy]\nstrategy = \"command\"\ncommand = \"python3\"\nargs = [\"-c\", %q]\nsandbox_write = [%q]\n", script, deciders)
}

func simHost(extra string) string {
	return fmt.Sprintf("[hosts.w]\ncommand = %q\nargs = [\"sim\"]\nenv = { AGENTMUX_RUNTIME_MAIN = \"1\" }\nstop_grace = \"2s\"\n%s\n", os.Args[0], extra)
}

// TestFleetSupervisorNodeKilledMidDecision: the supervisor node deciding an approval is
// killed with SIGKILL; the other supervisor node answers long before the 30 s deadline,
// and the agent gets that answer, not the default.
func TestFleetSupervisorNodeKilledMidDecision(t *testing.T) {
	t.Parallel()
	supervisorFailover(t, func(p *proc) { kill(t, p) }, nil)
}

// TestFleetSupervisorNodeTerminatedMidDecision: the deciding supervisor node gets
// SIGTERM; it lets go of the ask as it stops (measured: answered 6.5 s after the
// signal, for a 4 s decision), the other node answers, and the stopped node exits 0.
func TestFleetSupervisorNodeTerminatedMidDecision(t *testing.T) {
	t.Parallel()
	supervisorFailover(t, func(p *proc) {
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}, func(_ *fleet, _ jetstream.JetStream, stopped *proc, name string) {
		if code := stopped.wait(t, 60*time.Second); code != exitOK {
			t.Fatalf("%s exited %d on SIGTERM:\n%s", name, code, stopped.stderr)
		}
	})
}

// TestFleetSupervisorNodeHungMidDecision: the deciding supervisor node is stopped
// (SIGSTOP: alive to the NATS server, silent to everyone); the ask goes by name to the
// other node, which answers before the deadline. Resumed, the hung node's answer comes
// late: refused, counted and audited with who sent it.
func TestFleetSupervisorNodeHungMidDecision(t *testing.T) {
	t.Parallel()
	supervisorFailover(t, func(p *proc) {
		if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}, func(f *fleet, js jetstream.JetStream, hung *proc, name string) {
		if err := hung.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		proctest.EventuallyWithin(t, 30*time.Second, "the hung member's late answer is audited as refused", func() bool {
			for _, r := range auditRecords(t, js) {
				if r.Kind == "answer.refused" && r.Member == name && r.Decider == "command:policy" {
					return true
				}
			}
			return false
		})
	})
}

// supervisorFailover runs an approval decided by a slow command supervisor on one of
// two supervisor nodes, silences the deciding node with silence, and checks that the
// other node's answer reaches the agent; then runs after, if any.
func supervisorFailover(t *testing.T, silence func(*proc), after func(f *fleet, js jetstream.JetStream, silenced *proc, name string)) {
	f := startFleet(t, "")
	f.manifest = f.write(t, "fleet.toml", readFile(t, f.manifest)+simHost(`question_timeout = "30s"`)+
		slowPolicy(t, f.dir, 4*time.Second)+"[[routes]]\nsupervisor = \"policy\"\n")
	_, js := f.conn(t)
	f.node(t, "agents", "--no-supervisors")
	sups, names := map[int]*proc{}, map[int]string{}
	for _, name := range []string{"sup1", "sup2"} {
		p := f.node(t, name, "--no-hosts")
		sups[p.cmd.Process.Pid], names[p.cmd.Process.Pid] = p, name
	}
	// Both members are in the directory before the ask: the agents' node has their
	// heartbeats.
	proctest.EventuallyWithin(t, 45*time.Second, "both supervisor nodes heartbeat", func() bool {
		return stateOf(t, f, "sup1") == "up" && stateOf(t, f, "sup2") == "up"
	})
	script := `{"steps":[{"send":{"type":"approval","id":"a1","description":"deploy to staging"}},{"await":"a1"},{"result":"deployed"}]}`
	submit := runtimeProc(t, "submit", "-c", f.manifest, "--id", "t-approve", "w", script, "--follow")
	var first int
	proctest.EventuallyWithin(t, 40*time.Second, "a supervisor node is deciding", func() bool {
		first = deciders(t, f.dir, 0)
		return first != 0
	})
	victim := sups[first]
	if victim == nil {
		t.Fatalf("the deciding process %d is not a supervisor node", first)
	}
	silencedAt := time.Now()
	silence(victim)
	if code := submit.wait(t, 40*time.Second); code != exitOK {
		t.Fatalf("submit exit %d\nstderr:\n%s", code, submit.stderr)
	}
	took := time.Since(silencedAt)
	proctest.EventuallyWithin(t, 10*time.Second, "the session's end in the audit", func() bool {
		for _, r := range auditRecords(t, js) {
			if r.Session == "t-approve" && r.Kind == "session.ended" {
				return true
			}
		}
		return false
	})
	checkInvariants(t, js, "t-approve")
	out := submit.stdout.String()
	if !strings.Contains(out, `"value":"yes"`) || !strings.Contains(submit.stderr.String(), `"decider":"command:policy"`) {
		t.Fatalf("the approval was not answered by the policy:\nstdout %s\nstderr %s", out, submit.stderr)
	}
	second := deciders(t, f.dir, 1)
	if second == 0 || second == first || sups[second] == nil {
		t.Fatalf("deciders %d then %d; want the other supervisor node second", first, second)
	}
	t.Logf("answered by the other member %v after %s was silenced (think time 4s, silence window %v)",
		took.Round(time.Millisecond), names[first], ask.DefaultSilence)
	if after != nil {
		after(f, js, victim, names[first])
	}
}

// deciders returns the pid of the i-th decision's node, or 0 while there is none.
func deciders(t *testing.T, dir string, i int) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "deciders"))
	if err != nil {
		return 0
	}
	lines := strings.Fields(string(b))
	if len(lines) <= i {
		return 0
	}
	pid, err := strconv.Atoi(lines[i])
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestFleetAgentNodeKilledWithSessionsRunning: an agent node running four sessions is
// killed with SIGKILL; the other agent node runs each task again, and every task ends
// ok exactly once (in the audit) within 25 s of the kill, its new attempt numbered.
func TestFleetAgentNodeKilledWithSessionsRunning(t *testing.T) {
	t.Parallel()
	f := startFleet(t, simHost("pool = 4")+"[supervisors.ok]\nstrategy = \"static\"\nanswers = { question = \"go on\" }\n[[routes]]\nsupervisor = \"ok\"\n")
	nc, js := f.conn(t)
	f.node(t, "sup", "--no-hosts")
	victim := f.node(t, "agents1", "--no-supervisors")
	started := events[wire.SessionStarted](t, nc, "agentmux.evt.w.*.session.started")
	script := `{"steps":[{"send":{"type":"question","id":"q1","question":"carry on?"}},{"await":"q1"},{"sleep":"6s"},{"result":"done"}]}`
	tasks := []string{"t-1", "t-2", "t-3", "t-4"}
	submitTasks(t, js, "w", script, tasks...)
	for range tasks {
		select {
		case s := <-started:
			if s.Node != "agents1" || s.Attempt != 0 {
				t.Fatalf("first start %+v; want attempt 0 on agents1", s)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the four sessions did not start on agents1")
		}
	}
	proctest.EventuallyWithin(t, 20*time.Second, "the four questions answered on agents1, in the audit", func() bool {
		n := 0
		for _, r := range auditRecords(t, js) {
			if r.Kind == "answer" && r.Node == "agents1" {
				n++
			}
		}
		return n == len(tasks)
	})
	killedAt := time.Now()
	kill(t, victim)
	agents2 := f.node(t, "agents2", "--no-supervisors")
	defer func() {
		if t.Failed() {
			t.Logf("agents2:\n%s", agents2.stderr)
		}
	}()

	ended := map[string]int{}
	proctest.EventuallyWithin(t, 25*time.Second, "every task ended ok on agents2", func() bool {
		clear(ended)
		for _, r := range auditRecords(t, js) {
			if r.Kind == "session.ended" {
				if r.Outcome != "ok" || r.Node != "agents2" {
					t.Fatalf("task %s ended %s on %s: %s", r.Session, r.Outcome, r.Node, r.Error)
				}
				ended[r.Session]++
			}
		}
		return len(ended) == len(tasks)
	})
	t.Logf("all four tasks ended ok %v after the kill", time.Since(killedAt).Round(time.Millisecond))
	checkInvariants(t, js, tasks...)
	for _, id := range tasks {
		if ended[id] != 1 {
			t.Errorf("task %s ended %d times in the audit; want once", id, ended[id])
		}
	}
	// The dead node's own start records may be lost with it when it was killed within
	// milliseconds of starting (its audit is published asynchronously); the new
	// attempt's start is there, numbered after the first.
	for _, r := range auditRecords(t, js) {
		switch {
		case r.Kind != "session.started":
		case r.Node == "agents1" && r.Attempt != 0, r.Node == "agents2" && r.Attempt < 1:
			t.Errorf("task %s started as attempt %d on %s; want 0 on the dead node, a later one on agents2", r.Session, r.Attempt, r.Node)
		}
	}
	proctest.EventuallyWithin(t, 10*time.Second, "each task's new attempt is in the audit", func() bool {
		again := map[string]bool{}
		for _, r := range auditRecords(t, js) {
			if r.Kind == "session.started" && r.Node == "agents2" {
				again[r.Session] = true
			}
		}
		return len(again) == len(tasks)
	})
	// The new attempt was told of the first: its question, answered on agents1, is
	// answered again from that answer, without asking the supervisor.
	for _, r := range auditRecords(t, js) {
		if r.Kind == "answer" && r.Node == "agents2" && r.Decider != "replay:static:ok" {
			t.Errorf("task %s request %s answered on agents2 by %s; want replay:static:ok", r.Session, r.Request, r.Decider)
		}
	}
}

// TestFleetTaskStreamLeaderKilled: the NATS server leading the task stream is killed
// while 20 sessions ask questions; every session ends ok with no default answer, and a
// task submitted afterwards runs.
func TestFleetTaskStreamLeaderKilled(t *testing.T) {
	t.Parallel()
	f := startFleet(t, simHost("pool = 20\nquestion_timeout = \"30s\"")+
		"[supervisors.ok]\nstrategy = \"static\"\nanswers = { question = \"go on\" }\n[[routes]]\nsupervisor = \"ok\"\n")
	nc, js := f.conn(t)
	// A node that says replicas = 1 changes the streams to one copy, and the next one,
	// on the default, back to three; each says so.
	one := f.write(t, "one.toml", strings.Replace(readFile(t, f.manifest), "[metrics]", "replicas = 1\n[metrics]", 1))
	down := runtimeProc(t, "up", "-c", one, "--name", "r1", "--no-hosts", "--no-supervisors", "--log", "info")
	until(t, "replicas lowered", down.stderr, `changing the replicas of a stream" stream=AGENTMUX_TASKS from=3 to=1`)
	until(t, "r1 up", down.stderr, "node up")
	kill(t, down)
	up := f.node(t, "sup", "--no-hosts")
	if !strings.Contains(up.stderr.String(), `changing the replicas of a stream" stream=AGENTMUX_TASKS from=1 to=3`) {
		t.Fatalf("the next node did not raise the replicas back:\n%s", up.stderr)
	}
	f.node(t, "agents", "--no-supervisors")
	var steps []string
	for i := range 8 {
		steps = append(steps, fmt.Sprintf(`{"send":{"type":"question","id":"q%d","question":"step %d?"}},{"await":"q%d"},{"sleep":"500ms"}`, i, i, i))
	}
	script := `{"steps":[` + strings.Join(steps, ",") + `,{"result":"done"}]}`
	var tasks []string
	for i := range 20 {
		tasks = append(tasks, fmt.Sprintf("t-%d", i))
	}
	submitTasks(t, js, "w", script, tasks...)
	answered := events[wire.RequestAnswered](t, nc, "agentmux.evt.w.*.request.answered")
	<-answered // sessions are asking

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, wire.TaskStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil || info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
		t.Fatalf("task stream %+v (%v); want a leader and two replicas", info, err)
	}
	leader := slices.Index(f.names, info.Cluster.Leader)
	kill(t, f.servers[leader])
	t.Logf("killed %s, the task stream's leader", f.names[leader])

	// Records whose publish met the election are published again until acknowledged, so
	// a session's end can be in the audit a moment before its last answers: wait for
	// every session's end and all its answers, each once.
	ended := map[string][]wire.AuditRecord{}
	answers := map[string]int{}
	var records []wire.AuditRecord
	complete := func() bool {
		clear(ended)
		clear(answers)
		records = auditRecords(t, js)
		for _, r := range records {
			switch r.Kind {
			case "session.ended":
				ended[r.Session] = append(ended[r.Session], r)
			case "answer":
				answers[r.Session]++
			}
		}
		for _, id := range tasks {
			if len(ended[id]) == 0 || answers[id] < 8 {
				return false
			}
		}
		return true
	}
	proctest.Poll(60*time.Second, 100*time.Millisecond, complete) // what is missing is reported below
	for _, id := range tasks {
		if rs := ended[id]; len(rs) != 1 || rs[0].Outcome != "ok" {
			t.Errorf("task %s ended %+v; want once, ok", id, rs)
		}
		if answers[id] != 8 {
			t.Errorf("session %s has %d answers in the audit; want all 8", id, answers[id])
		}
	}
	for _, r := range records {
		if r.Kind == "answer" && r.Decider != "static:ok" && r.Decider != "replay:static:ok" { // a task delivered again replays its answers
			t.Errorf("session %s request %s answered by %s (%s): want the supervisor, never a default", r.Session, r.Request, r.Decider, r.Reason)
		}
	}
	checkInvariants(t, js, tasks...)
	after := runtimeProc(t, "submit", "-c", f.manifest, "--id", "t-after", "w", `{"steps":[{"result":"still here"}]}`, "--follow")
	if code := after.wait(t, 30*time.Second); code != exitOK || !strings.Contains(after.stdout.String(), "still here") {
		t.Fatalf("a task submitted after the kill: exit %d\nstdout %s\nstderr %s", code, after.stdout, after.stderr)
	}

	// Restarted on its store, the server rejoins and catches up: the stream has three
	// current copies again.
	// Its node waits out JetStream while the server catches up (store.Settled).
	f.servers[leader] = f.server(t, leader)
	untilWithin(t, f.names[leader]+" back", f.servers[leader].stderr, "node up", 90*time.Second)
	proctest.EventuallyWithin(t, 30*time.Second, f.names[leader]+" is a current replica of the task stream again", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		info, err := s.Info(ctx)
		if err != nil || info.Cluster == nil {
			return false
		}
		current := 0
		for _, r := range info.Cluster.Replicas {
			if r.Current && !r.Offline {
				current++
			}
		}
		return current == 2 && (info.Cluster.Leader == f.names[leader] || slices.ContainsFunc(info.Cluster.Replicas,
			func(r *jetstream.PeerInfo) bool { return r.Name == f.names[leader] }))
	})
}

// TestFleetDrainLosesNothing: a drained node finishes what it runs within the grace
// and takes nothing more; one drained with no grace hands its running task back; every
// task ends ok exactly once, on the node `agentmux nodes` says ran it.
func TestFleetDrainLosesNothing(t *testing.T) {
	t.Parallel()
	f := startFleet(t, simHost("pool = 2")+"[supervisors.ok]\nstrategy = \"static\"\nanswers = { question = \"go on\" }\n"+
		"[supervisors.gate]\nstrategy = \"external\"\n[[routes]]\nmatch = \"gate\"\nsupervisor = \"gate\"\n[[routes]]\nsupervisor = \"ok\"\n")
	nc, js := f.conn(t)
	// The gate is this test: the first sessions wait on it until the drain has begun.
	gate := make(chan *nats.Msg, 8)
	var open atomic.Bool
	sub, err := nc.QueueSubscribe(wire.AskSubject("gate"), "gate", func(m *nats.Msg) {
		if open.Load() {
			_ = m.Respond([]byte(`{"value":"open","decider":"gate"}`))
			return
		}
		gate <- m
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	f.node(t, "sup", "--no-hosts")
	f.node(t, "a1", "--no-supervisors")
	script := `{"steps":[{"send":{"type":"question","id":"q1","question":"through the gate?"}},{"await":"q1"},{"result":"done"}]}`
	submit := func(id, script string) {
		if code := runtimeProc(t, "submit", "-c", f.manifest, "--id", id, "w", script).wait(t, 30*time.Second); code != exitOK {
			t.Fatalf("submit %s: exit %d", id, code)
		}
	}
	submitTasks(t, js, "w", script, "t-1", "t-2", "t-3")
	// a1's pool of 2 takes two, which wait at the gate; the third waits in the stream.
	held := []*nats.Msg{<-gate, <-gate}

	d := runtimeProc(t, "drain", "-c", f.manifest, "a1", "--grace", "60s", "--wait")
	until(t, "a1 draining", d.stdout, "a1: draining: 2 sessions may finish within 1m0s, 0 queued tasks handed back")
	for _, m := range held {
		if err := m.Respond([]byte(`{"value":"open","decider":"gate"}`)); err != nil {
			t.Fatal(err)
		}
	}
	if code := d.wait(t, 40*time.Second); code != exitOK || !strings.Contains(d.stdout.String(), "a1: drained") {
		t.Fatalf("drain a1: exit %d\nstdout %s\nstderr %s", code, d.stdout, d.stderr)
	}
	open.Store(true) // the third session, on the next node, passes the gate at once
	proctest.EventuallyWithin(t, 30*time.Second, "agentmux nodes says a1 is draining", func() bool { return stateOf(t, f, "a1") == "draining" })
	table := runtimeProc(t, "nodes", "-c", f.manifest)
	if code := table.wait(t, 20*time.Second); code != exitOK {
		t.Fatalf("agentmux nodes: exit %d\n%s", code, table.stderr)
	}
	for _, want := range []string{"NODE", "HOSTS (busy/free)", "a1", "draining", "w 0/2", "sup", "ok", "nats1"} {
		if !strings.Contains(table.stdout.String(), want) {
			t.Errorf("agentmux nodes lacks %q:\n%s", want, table.stdout)
		}
	}
	f.node(t, "a2", "--no-supervisors")
	waitEnded(t, js, map[string]string{"t-1": "a1", "t-2": "a1", "t-3": "a2"})
	long := `{"steps":[{"send":{"type":"question","id":"q1","question":"carry on?"}},{"await":"q1"},{"sleep":"30s"},{"result":"done"}]}`

	// No grace: the running task goes back to the queue and runs on the next node.
	submit("t-long", long)
	proctest.EventuallyWithin(t, 20*time.Second, "a2 runs t-long", func() bool { return nodeSessions(t, f, "a2") == 1 })
	d = runtimeProc(t, "drain", "-c", f.manifest, "a2", "--grace", "0s", "--wait")
	if code := d.wait(t, 40*time.Second); code != exitOK {
		t.Fatalf("drain a2: exit %d\nstdout %s\nstderr %s", code, d.stdout, d.stderr)
	}
	f.node(t, "a3", "--no-supervisors")
	waitEnded(t, js, map[string]string{"t-1": "a1", "t-2": "a1", "t-3": "a2", "t-long": "a3"})
	checkInvariants(t, js, "t-1", "t-2", "t-3", "t-long")
}

// waitEnded waits until each task has ended ok exactly once, on the node given.
func waitEnded(t *testing.T, js jetstream.JetStream, want map[string]string) {
	t.Helper()
	var ok map[string][]string
	proctest.EventuallyWithin(t, 60*time.Second, fmt.Sprintf("tasks %v ended ok", want), func() bool {
		ok = map[string][]string{}
		for _, r := range auditRecords(t, js) {
			if r.Kind == "session.ended" && r.Outcome == "ok" {
				ok[r.Session] = append(ok[r.Session], r.Node)
			}
		}
		for id := range want {
			if len(ok[id]) == 0 {
				return false
			}
		}
		return true
	})
	for id, node := range want {
		if len(ok[id]) != 1 || ok[id][0] != node {
			t.Errorf("task %s ended ok on %v; want once, on %s", id, ok[id], node)
		}
	}
}

// nodeInfo reads one node's entry from `agentmux nodes --json`.
// A read of the nodes bucket that timed out (a loaded cluster) is no row: the callers
// poll, and ask again.
func nodeInfo(t *testing.T, f *fleet, name string) map[string]any {
	t.Helper()
	p := runtimeProc(t, "nodes", "-c", f.manifest, "--json")
	if code := p.wait(t, 20*time.Second); code != exitOK {
		if strings.Contains(p.stderr.String(), "context deadline exceeded") {
			t.Logf("agentmux nodes: exit %d, asked again: %s", code, p.stderr)
			return nil
		}
		t.Fatalf("agentmux nodes: exit %d\n%s", code, p.stderr)
	}
	var rows []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(p.stdout.String()), "\n") {
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("agentmux nodes --json: %v\n%s", err, p.stdout)
		}
		rows = append(rows, r)
	}
	for _, r := range rows {
		if r["name"] == name {
			return r
		}
	}
	return nil
}

func nodeSessions(t *testing.T, f *fleet, name string) int {
	if r := nodeInfo(t, f, name); r != nil {
		n, _ := r["sessions"].(float64)
		return int(n)
	}
	return -1
}

func stateOf(t *testing.T, f *fleet, name string) string {
	if r := nodeInfo(t, f, name); r != nil {
		s, _ := r["state"].(string)
		return s
	}
	return ""
}
