package node

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentmux/agentmux/actors/agent"
	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/wire"
)

func TestAgentThatStopsReadingStdinFailsItsSession(t *testing.T) {
	// The agent never reads: a 4 MiB prompt fills the pipe and the write times out.
	f := start(t, "[hosts.deaf]\ncommand = \"sh\"\nargs = [\"-c\", \"exec sleep 3600\"]\nenv = { AGENTMUX_TEST_MARK = \"@MARK@\" }\nstop_grace = \"1s\"\n",
		func(o *Options) { o.WriteTimeout = 300 * time.Millisecond })
	res := f.run("deaf", strings.Repeat("p", 4<<20))
	if want := "agent stopped reading stdin: a write timed out after 300ms"; res.OK || res.Error != want {
		t.Fatalf("result = %+v; want error %q", res, want)
	}
	if v := testutil.ToFloat64(f.n.Metrics.StdinWrites.WithLabelValues("deaf", "timeout")); v != 1 {
		t.Fatalf("stdin write timeouts = %v", v)
	}
	proctest.Within(t, 10*time.Second, func() error {
		if pids := f.leftovers(); len(pids) > 0 {
			return fmt.Errorf("the deaf agent was not stopped: %v", pids)
		}
		return nil
	})
}

// countingAgent fails until its attempt number (kept in a file) reaches succeedAt.
func countingAgent(t *testing.T, retries, succeedAt int) string {
	dir := t.TempDir()
	counter := filepath.Join(dir, "attempts")
	script := fmt.Sprintf(`n=$(cat %[1]s 2>/dev/null || echo 0); n=$((n+1)); echo $n > %[1]s; read p; `+
		`if [ $n -lt %[2]d ]; then echo "attempt $n fails" >&2; exit 3; fi; echo '{"type":"result","text":"attempt '$n'"}'`, counter, succeedAt)
	return fmt.Sprintf("[hosts.flaky]\ncommand = \"sh\"\nargs = [\"-c\", %q]\nretries = %d\nsandbox_write = [%q]\nenv = { AGENTMUX_TEST_MARK = \"@MARK@\" }\n", script, retries, dir)
}

func TestRetriesRunAFailedSessionAgain(t *testing.T) {
	f := start(t, countingAgent(t, 2, 3))
	res := f.run("flaky", "go")
	if !res.OK || !strings.Contains(string(res.Payload), `"attempt 3"`) || res.Attempt != 2 {
		t.Fatalf("result = %+v %s; want success on the third attempt (attempt index 2)", res, res.Payload)
	}
	if v := testutil.ToFloat64(f.n.Metrics.AgentStarts.WithLabelValues("flaky")); v != 3 {
		t.Fatalf("processes started = %v; want 3", v)
	}
}

func TestRetriesExhausted(t *testing.T) {
	f := start(t, countingAgent(t, 1, 10))
	res := f.run("flaky", "go")
	if res.OK || !strings.HasPrefix(res.Error, "agent exited without result (exit status ") || res.Attempt != 1 {
		t.Fatalf("result = %+v; want the failure of the second and last attempt", res)
	}
}

func TestAgentErrorIsNotRetried(t *testing.T) {
	f := start(t, simHost("w", "retries = 3"))
	res := f.run("w", script(`{"error":"bad prompt"}`))
	if res.OK || res.Error != "bad prompt" || res.Attempt != 0 {
		t.Fatalf("result = %+v; an error the agent reports is its answer, not a crash to retry", res)
	}
}

// Stderr lines are events of the session that runs, rate-limited, and every line is
// counted as published or dropped. stderr is read apart from stdout, so the agent asks
// a question once its noise is written, and the test answers it only when the first
// stderr event is out: the session is still running when its stderr arrives.
func TestStderrIsPublishedRateLimited(t *testing.T) {
	f := start(t, `[hosts.noisy]
command = "sh"
args = ["-c", "read p; echo 'first line' >&2; i=0; while [ $i -lt 1000 ]; do echo \"noise $i\" >&2; i=$((i+1)); done; echo '{\"type\":\"question\",\"id\":\"q\",\"question\":\"seen?\"}'; read a; echo done"]
env = { AGENTMUX_TEST_MARK = "@MARK@" }
[supervisors.watcher]
strategy = "external"
[[routes]]
supervisor = "watcher"
`)
	events := make(chan *nats.Msg, 2048)
	sub, err := f.n.Bus.Conn.ChanSubscribe(wire.EventSubject("noisy", "*", wire.EventStderr), events)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	first := make(chan *nats.Msg, 1)
	answerer(t, f.n.Bus.Conn, "watcher", func(_ *wire.Ask, m *nats.Msg) {
		go func() {
			select {
			case e := <-events:
				first <- e
			case <-time.After(20 * time.Second):
				close(first)
			}
			reply(t, m, `"yes"`)
		}()
	})
	res := f.run("noisy", "go")
	if !res.OK {
		t.Fatalf("result = %+v", res)
	}
	e, ok := <-first
	if !ok {
		t.Fatal("no stderr event within 20 s of the agent's question")
	}
	if _, session, _, _ := wire.ParseEventSubject(e.Subject); !strings.Contains(string(e.Data), "first line") || session != res.Session {
		t.Fatalf("first stderr event %s on %s; want the first line, on session %s", e.Data, e.Subject, res.Session)
	}
	// stderr is read apart from stdout: its last lines may be counted after the result.
	proctest.Within(t, 5*time.Second, func() error {
		published := testutil.ToFloat64(f.n.Metrics.StderrLines.WithLabelValues("noisy", "published"))
		dropped := testutil.ToFloat64(f.n.Metrics.StderrLines.WithLabelValues("noisy", "dropped"))
		if published+dropped != 1001 || dropped < 500 {
			return fmt.Errorf("stderr lines published %v, dropped %v; want 1001 in all, most dropped by the rate limit", published, dropped)
		}
		return nil
	})
}

// ctl sends a control request to the node, as `agentmux` clients do.
func ctl(t *testing.T, f *fixture, verb, session, text string) wire.Delivery {
	t.Helper()
	data, _ := json.Marshal(map[string]string{"session": session, "text": text})
	m, err := f.n.Bus.Conn.Request(wire.CtlSubject(f.n.Name, verb), data, 5*time.Second)
	if err != nil {
		t.Fatalf("ctl %s: %v", verb, err)
	}
	var d wire.Delivery
	if err := json.Unmarshal(m.Data, &d); err != nil {
		t.Fatalf("ctl %s reply %s: %v", verb, m.Data, err)
	}
	return d
}

// startLong starts a session that waits for a long time, and returns when it runs.
func startLong(t *testing.T, f *fixture, host string) (string, chan *agent.Result) {
	t.Helper()
	results := make(chan *agent.Result, 1)
	started := make(chan *nats.Msg, 1)
	sub, err := f.n.Bus.Conn.ChanSubscribe(wire.EventSubject(host, "*", "progress"), started)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := f.n.Bus.Conn.Flush(); err != nil {
		t.Fatal(err)
	}
	session := f.n.Submit(host, "", script(send(`{"type":"progress","message":"waiting"}`), `{"sleep":"60s"}`, result), results)
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the session did not start")
	}
	return session, results
}

func TestMessageAndInterruptToACapableAgent(t *testing.T) {
	f := start(t, simHost("w", "[hosts.w.params]\nx = 1\n"))
	session, results := startLong(t, f, "w")
	if d := ctl(t, f, "message", session, "use the staging database"); !d.OK {
		t.Fatalf("message: %+v", d)
	}
	if d := ctl(t, f, "interrupt", session, "operator says stop"); !d.OK || !strings.Contains(d.Effect, "interrupt written") {
		t.Fatalf("interrupt: %+v", d)
	}
	res := <-results
	var p struct {
		Interrupted bool
		Messages    []string
	}
	if err := json.Unmarshal(res.Payload, &p); err != nil || !res.OK || !p.Interrupted || len(p.Messages) != 1 || p.Messages[0] != "use the staging database" {
		t.Fatalf("result %+v %s: the agent should have read the message, then ended on the interrupt", res, res.Payload)
	}
	if d := ctl(t, f, "message", session, "too late"); d.OK || !strings.Contains(d.Error, "no running session") {
		t.Fatalf("message after the end: %+v", d)
	}
}

func TestMessageAndInterruptToAnAgentWithoutCapabilities(t *testing.T) {
	// No params: no init, so no capabilities are declared.
	f := start(t, simHost("w", ""))
	session, results := startLong(t, f, "w")
	if d := ctl(t, f, "message", session, "hello"); d.OK || !strings.Contains(d.Error, "did not declare the message capability") {
		t.Fatalf("message: %+v; want a clear refusal", d)
	}
	if d := ctl(t, f, "interrupt", session, "operator says stop"); !d.OK || !strings.Contains(d.Effect, "process stopped") {
		t.Fatalf("interrupt: %+v", d)
	}
	if res := <-results; res.OK || res.Error != "session interrupted: operator says stop" {
		t.Fatalf("result = %+v", res)
	}
}

func TestListShowsRunningSessions(t *testing.T) {
	f := start(t, simHost("w", ""))
	session, _ := startLong(t, f, "w")
	m, err := f.n.Bus.Conn.Request(wire.CtlSubject(f.n.Name, "list"), nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(m.Data), `"session":"`+session+`","host":"w"`) || !strings.Contains(string(m.Data), `"state":"running"`) {
		t.Fatalf("list = %s", m.Data)
	}
}

// TestAgentKilledSaysBySignal: an agent killed from outside ends its session with an
// error naming the signal.
func TestAgentKilledSaysBySignal(t *testing.T) {
	f := start(t, simHost("w", "")+"[supervisors.nobody]\nstrategy = \"external\"\n[[routes]]\nsupervisor = \"nobody\"\n")
	// The question on the bus says the agent itself runs under its shim. The agent alone
	// is killed, as the kernel's OOM killer would: killing the shim as well, one process
	// after the other, leaves a window in which the node sees the shim gone, closes the
	// agent's stdin, and the agent, its question ended, writes its result.
	asked, err := f.n.Bus.Conn.SubscribeSync(wire.AskSubject("nobody"))
	if err != nil {
		t.Fatal(err)
	}
	reply := make(chan *agent.Result, 1)
	f.n.Submit("w", "", script(send(`{"type":"question","id":"q1","question":"anyone?"}`), await("q1"), result), reply)
	if _, err := asked.NextMsg(10 * time.Second); err != nil {
		t.Fatalf("the agent's question never reached the bus: %v", err)
	}
	var killed []int
	for _, pid := range f.leftovers() {
		// The shim leads the session's process group; the agent is the member that does not.
		if pgid, err := syscall.Getpgid(pid); err == nil && pgid != pid {
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed = append(killed, pid)
		}
	}
	if len(killed) != 1 {
		t.Fatalf("agents killed = %v; want the one agent under the session's shim", killed)
	}
	select {
	case res := <-reply:
		if want := "agent exited without result (killed by signal killed)"; res.OK || res.Error != want {
			t.Fatalf("result %+v; want %q", res, want)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the session did not end after its agent was killed")
	}
}
