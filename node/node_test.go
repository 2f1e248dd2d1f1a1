package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentmux/agentmux/actors/agent"
	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/internal/invariants"
	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// fixture is one node on its own embedded NATS, with a marker in every agent's
// environment so leftover processes can be found.
type fixture struct {
	t    *testing.T
	n    *Node
	mark string
}

// simHost is a host that runs this test binary as the scripted agent.
func simHost(name, extra string) string {
	return fmt.Sprintf("[hosts.%s]\ncommand = %q\nenv = { AGENTMUX_SIM = \"1\", AGENTMUX_TEST_MARK = \"@MARK@\" }\nstop_grace = \"1s\"\n%s\n", name, os.Args[0], extra)
}

// peerUser lets in peer nodes over a fixture's server (its manifest ends with it): a
// server lets no anonymous client in.
const peerUser = "\n[[nats.users]]\nname = \"peer\"\npassword_env = \"T_PEER_PASSWORD\"\nrole = \"node\"\n"

// peerOf is the [nats] of a node on f's server, as peerUser.
func peerOf(f *fixture) string {
	return fmt.Sprintf("[nats]\nurl = %q\nuser = \"peer\"\npassword_env = \"T_PEER_PASSWORD\"\n", f.n.Bus.ClientURL())
}

// agentsAsRoot has m's hosts that name no user say user = "root" when the tests run as
// root (as in CI), where a node refuses an agent with no user: what a test's agents
// may do is its sandbox's to decide, as it is for a node run as a user.
func agentsAsRoot(m *config.Manifest) {
	if os.Geteuid() != 0 {
		return
	}
	for _, h := range m.Hosts {
		if h.User == "" {
			h.User = "root"
		}
	}
}

func start(t *testing.T, manifest string, options ...func(*Options)) *fixture {
	t.Helper()
	mark := nuid.Next()
	manifest = strings.ReplaceAll(manifest, "@MARK@", mark)
	m, err := config.Parse(filepath.Join(t.TempDir(), "m.toml"), []byte(manifest))
	if err != nil {
		t.Fatalf("manifest: %v\n%s", err, manifest)
	}
	agentsAsRoot(m)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	opts := Options{Manifest: m, Log: log, Ephemeral: true, MetricsAddr: "-", Name: "test"}
	for _, o := range options {
		o(&opts)
	}
	n, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, n: n, mark: mark}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := n.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
		proctest.Within(t, 5*time.Second, func() error {
			if pids := f.leftovers(); len(pids) > 0 {
				return fmt.Errorf("agent processes still alive: %v", pids)
			}
			return nil
		})
	})
	return f
}

// leftovers lists live processes carrying this fixture's marker.
func (f *fixture) leftovers() []int { return proctest.Marked(f.mark) }

func (f *fixture) run(host, prompt string) *agent.Result {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := f.n.Run(ctx, host, "", prompt)
	if err != nil {
		f.t.Fatalf("session did not end: %v", err)
	}
	f.checkAudit(res.Session)
	return res
}

// checkAudit ends every session a test runs with the invariant checker over its audit
// (internal/invariants), once the session's end is recorded.
func (f *fixture) checkAudit(session string) {
	f.t.Helper()
	var records []wire.AuditRecord
	proctest.Within(f.t, 10*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		rs, err := store.ReadAudit(ctx, f.n.Bus.JS, session)
		if err != nil {
			return err
		}
		records = records[:0]
		ended := false
		for _, r := range rs {
			records = append(records, *r)
			ended = ended || r.Kind == "session.ended"
		}
		if !ended {
			return fmt.Errorf("session %s: no session.ended in its %d audit records yet", session, len(rs))
		}
		return nil
	})
	for _, v := range invariants.Violations(records, nil) {
		f.t.Errorf("audit of session %s: %s", session, v)
	}
}

// answers decodes the sim's report of what it was answered.
func answers(t *testing.T, res *agent.Result) map[string]struct {
	Value   json.RawMessage
	Outcome string
	Reason  string
} {
	t.Helper()
	if !res.OK {
		t.Fatalf("session failed: %s", res.Error)
	}
	var p struct {
		Answers map[string]struct {
			Value   json.RawMessage
			Outcome string
			Reason  string
		}
	}
	if err := json.Unmarshal(res.Payload, &p); err != nil {
		t.Fatalf("result payload %s: %v", res.Payload, err)
	}
	return p.Answers
}

func script(steps ...string) string { return `{"steps":[` + strings.Join(steps, ",") + `]}` }
func send(msg string) string        { return `{"send":` + msg + `}` }
func await(id string) string        { return `{"await":"` + id + `"}` }

const result = `{"result":"done"}`

func record(res *agent.Result, id string) agent.RequestRecord {
	for _, r := range res.Requests {
		if r.ID == id {
			return r
		}
	}
	return agent.RequestRecord{}
}

func TestPlainTextAgent(t *testing.T) {
	f := start(t, "[hosts.echo]\ncommand = \"sh\"\nargs = [\"-c\", \"read line; echo \\\"you said: $line\\\"\"]\ninput_format = \"text\"\nenv = { AGENTMUX_TEST_MARK = \"@MARK@\" }\n")
	res := f.run("echo", "two\nlines")
	if !res.OK || !strings.Contains(string(res.Payload), `"text":"you said: two lines"`) {
		t.Fatalf("result = %+v %s", res, res.Payload)
	}
}

func TestRoutedSupervisorsAnswerTypedRequests(t *testing.T) {
	f := start(t, simHost("w", "question_default = \"skip\"")+`
[supervisors.security]
strategy = "rule"
rules = [{ type = "question", match = "(?i)token", answer = "RS256" }, { type = "approval", match = "rm -rf", answer = "no" }]
[supervisors.default]
strategy = "static"
answers = { question = "ok", approval = "yes", tool_call = { rows = 2 } }
[[routes]]
match = "(?i)token|rm -rf"
supervisor = "security"
[[routes]]
supervisor = "default"
`)
	res := f.run("w", script(
		send(`{"type":"progress","message":"start"}`),
		send(`{"type":"partial","text":"a"}`),
		send(`{"type":"question","id":"q1","question":"Which token algorithm?"}`),
		send(`{"type":"approval","id":"a1","description":"rm -rf /tmp/x"}`),
		send(`{"type":"approval","id":"a2","description":"write a file"}`),
		send(`{"type":"tool_call","tool":"grep","args":{}}`),
		send(`{"type":"mystery","x":1}`),
		send(`{"type":"partial","chunk":"b"}`),
		await("*"), result))
	got := answers(t, res)
	for id, want := range map[string]string{"q1": `"RS256"`, "a1": `"no"`, "a2": `"yes"`, "tool_call-1": `{"rows":2}`} {
		if string(got[id].Value) != want || got[id].Outcome != "answered" {
			t.Errorf("%s = %s %s; want %s answered", id, got[id].Value, got[id].Outcome, want)
		}
	}
	if r := record(res, "q1"); r.Decider != "rule:security" {
		t.Errorf("q1 decided by %q", r.Decider)
	}
	if !strings.Contains(string(res.Payload), `"partial_output":"ab"`) {
		t.Errorf("partial_output missing: %s", res.Payload)
	}
	if v := testutil.ToFloat64(f.n.Metrics.Messages.WithLabelValues("w", "listen:unhandled")); v != 1 {
		t.Errorf("unhandled messages = %v", v)
	}
}

// TestACheckpointNotTakenIsNotPublished: a reader of the events never sees a
// checkpoint's state, even from a host that does not declare checkpoints (its line is
// unhandled, published without the state); one the session takes is not published at
// all.
func TestACheckpointNotTakenIsNotPublished(t *testing.T) {
	f := start(t, simHost("w", `messages = ["progress"]`)+simHost("keeps", ""))
	sub, err := f.n.Bus.Conn.SubscribeSync(wire.AllEvents)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	f.run("w", script(send(`{"type":"checkpoint","state":{"token":"SECRET-unhandled"}}`), result))
	f.run("keeps", script(send(`{"type":"checkpoint","state":{"token":"SECRET-kept"}}`), result))
	var withheld, ended int
	for ended < 2 {
		m, err := sub.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatalf("the events of both sessions: %v (%d ended)", err, ended)
		}
		if strings.Contains(string(m.Data), "SECRET") {
			t.Fatalf("a reader of the events sees a checkpoint's state on %s: %s", m.Subject, m.Data)
		}
		if strings.HasSuffix(m.Subject, ":unhandled") && strings.Contains(string(m.Data), "withheld") {
			withheld++
		}
		if strings.HasSuffix(m.Subject, "."+wire.EventSessionEnded) {
			ended++
		}
	}
	if withheld != 1 {
		t.Errorf("%d unhandled checkpoint events saying their state was withheld; want the one of the host that does not declare checkpoints", withheld)
	}
}

// answerer is a supervisor written against the public subject API, as any language would.
func answerer(t *testing.T, nc *nats.Conn, name string, handle func(*wire.Ask, *nats.Msg)) {
	t.Helper()
	sub, err := nc.QueueSubscribe(wire.AskSubject(name), name, func(m *nats.Msg) {
		var ask wire.Ask
		if err := json.Unmarshal(m.Data, &ask); err != nil {
			t.Errorf("ask: %v", err)
			return
		}
		handle(&ask, m)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
}

func reply(t *testing.T, m *nats.Msg, value string) {
	data, _ := json.Marshal(&wire.Reply{Value: json.RawMessage(value), Decider: "test"})
	if err := m.Respond(data); err != nil {
		t.Errorf("respond: %v", err)
	}
}

func TestConcurrentQuestionsAnsweredOutOfOrder(t *testing.T) {
	f := start(t, simHost("w", "")+"[supervisors.ext]\nstrategy = \"external\"\n[[routes]]\nsupervisor = \"ext\"\n")
	var mu sync.Mutex
	held := map[string]*nats.Msg{}
	answerer(t, f.n.Bus.Conn, "ext", func(ask *wire.Ask, m *nats.Msg) {
		mu.Lock()
		defer mu.Unlock()
		held[ask.ID] = m
		if len(held) == 3 { // answer newest first
			for _, id := range []string{"q3", "q2", "q1"} {
				reply(t, held[id], `"answer to `+id+`"`)
			}
		}
	})
	res := f.run("w", script(
		send(`{"type":"question","id":"q1","question":"one"}`),
		send(`{"type":"question","id":"q2","question":"two"}`),
		send(`{"type":"question","id":"q3","question":"three"}`),
		await("*"), result))
	got := answers(t, res)
	for _, id := range []string{"q1", "q2", "q3"} {
		if string(got[id].Value) != `"answer to `+id+`"` {
			t.Errorf("%s got %s", id, got[id].Value)
		}
	}
}

func TestQuestionTimeoutWritesDefault(t *testing.T) {
	f := start(t, simHost("w", "question_timeout = \"300ms\"\nquestion_default = \"skip\"")+"[supervisors.slow]\nstrategy = \"external\"\n[[routes]]\nsupervisor = \"slow\"\n")
	late := make(chan *nats.Msg, 1)
	answerer(t, f.n.Bus.Conn, "slow", func(_ *wire.Ask, m *nats.Msg) { late <- m })
	res := f.run("w", script(send(`{"type":"question","id":"q1","question":"anyone?"}`), await("q1"),
		send(`{"type":"question","id":"q2","question":"quick","timeout_ms":100}`), await("q2"), result))
	got := answers(t, res)
	if string(got["q1"].Value) != `"skip"` || got["q1"].Outcome != "timed_out" {
		t.Fatalf("q1 = %s %s; want the default, timed_out", got["q1"].Value, got["q1"].Outcome)
	}
	if r := record(res, "q1"); r.Latency < 300*time.Millisecond {
		t.Fatalf("default written after %v, before the 300ms deadline", r.Latency)
	}
	if r := record(res, "q2"); r.Outcome != "timed_out" || r.Latency < 100*time.Millisecond || r.Latency > 290*time.Millisecond {
		t.Fatalf("q2 with timeout_ms 100: %+v", r)
	}
	// The supervisor answers after the deadline: dropped and counted.
	reply(t, <-late, `"too late"`)
	proctest.Within(t, 5*time.Second, func() error {
		if v := testutil.ToFloat64(f.n.Metrics.LateAnswers.WithLabelValues("w")); v < 1 {
			return fmt.Errorf("late answers = %v", v)
		}
		return nil
	})
}

func TestNoSupervisorDefaultAtDeadlineNotBefore(t *testing.T) {
	f := start(t, simHost("w", "question_timeout = \"400ms\"\napproval_default = \"no\"")+"[supervisors.nobody]\nstrategy = \"external\"\n[[routes]]\nsupervisor = \"nobody\"\n")
	res := f.run("w", script(send(`{"type":"approval","id":"a1","description":"deploy"}`), await("a1"), result))
	got := answers(t, res)
	r := record(res, "a1")
	if string(got["a1"].Value) != `"no"` || r.Outcome != "timed_out" || r.Latency < 400*time.Millisecond {
		t.Fatalf("a1 = %s %+v; want \"no\", timed_out, not before 400ms", got["a1"].Value, r)
	}
	if v := testutil.ToFloat64(f.n.Metrics.AskRequests.WithLabelValues("no_responders")); v < 2 {
		t.Fatalf("no-responder retries = %v; want the request retried until its deadline", v)
	}
}

func TestInvalidTypedAnswerGetsDefault(t *testing.T) {
	f := start(t, simHost("w", "question_default = \"skip\"")+"[supervisors.s]\nstrategy = \"static\"\nanswers = { question = \"not a boolean\" }\n[[routes]]\nsupervisor = \"s\"\n")
	res := f.run("w", script(send(`{"type":"question","id":"q1","kind":"confirm","question":"ok?","default":false}`), await("q1"), result))
	got := answers(t, res)
	if string(got["q1"].Value) != `false` || got["q1"].Outcome != "invalid" {
		t.Fatalf("q1 = %s %s; want the question's default false with outcome invalid", got["q1"].Value, got["q1"].Outcome)
	}
}

func TestAgentExitsMidQuestion(t *testing.T) {
	f := start(t, simHost("w", "")+"[supervisors.nobody]\nstrategy = \"external\"\n[[routes]]\nsupervisor = \"nobody\"\n")
	res := f.run("w", script(send(`{"type":"question","id":"q1","question":"still there?"}`), `{"stderr":"panic: out of cheese"}`, `{"exit":3}`))
	if want := "agent exited without result (exit status 3); last stderr: panic: out of cheese"; res.OK || res.Error != want {
		t.Fatalf("result = %+v", res)
	}
	if r := record(res, "q1"); r.Outcome != "cancelled" {
		t.Fatalf("pending request ended %q; want cancelled", r.Outcome)
	}
}

func TestIdleTimeoutKillsHungAgentAndGrandchild(t *testing.T) {
	f := start(t, simHost("w", "idle_timeout = \"500ms\""))
	res := f.run("w", script(`{"grandchild":true}`, `{"ignore_term":true}`, send(`{"type":"progress","message":"working"}`), `{"hang":true}`))
	if res.OK || res.Error != "session timed out after 500ms without output" {
		t.Fatalf("result = %+v", res)
	}
	proctest.Within(t, 10*time.Second, func() error {
		if pids := f.leftovers(); len(pids) > 0 {
			return fmt.Errorf("still alive after the stop ladder: %v", pids)
		}
		return nil
	})
}

// Progress keeps a session alive past its idle timeout: the session is idle only when
// nothing at all comes, even lines that never pass through the agent's actor.
func TestProgressKeepsAnIdleTimeoutAway(t *testing.T) {
	f := start(t, simHost("w", "idle_timeout = \"500ms\""))
	var steps []string
	for range 8 {
		steps = append(steps, send(`{"type":"progress","message":"working"}`), `{"sleep":"200ms"}`)
	}
	res := f.run("w", script(append(steps, result)...))
	if !res.OK {
		t.Fatalf("result = %+v; want the session to live on its progress for 1.6 s past a 500 ms idle timeout", res)
	}
}

func TestHugeLineThenNormalLine(t *testing.T) {
	f := start(t, simHost("w", ""))
	res := f.run("w", script(`{"raw_bytes":10485760}`, `{"raw":"{broken json"}`, send(`{"type":"progress","message":"after"}`), result))
	if !res.OK {
		t.Fatalf("result = %+v", res)
	}
	if v := testutil.ToFloat64(f.n.Metrics.FrameErrors.WithLabelValues("w", "too_long")); v != 1 {
		t.Fatalf("too_long frames = %v", v)
	}
	if v := testutil.ToFloat64(f.n.Metrics.FrameErrors.WithLabelValues("w", "invalid_json")); v != 1 {
		t.Fatalf("invalid_json frames = %v", v)
	}
}

// TestResultOverMaxLineBytesEndsTheSession: a result line too long to take is dropped,
// and the session ends at once saying so, instead of waiting for an agent that has
// nothing more to say (here: for a minute, longer than the run waits).
func TestResultOverMaxLineBytesEndsTheSession(t *testing.T) {
	f := start(t, simHost("w", "max_line_bytes = 4096"))
	big, _ := json.Marshal(`{"type": "result", "text": "` + strings.Repeat("x", 8000) + `"}`)
	res := f.run("w", script(send(`{"type":"progress","message":"almost"}`), `{"raw":`+string(big)+`}`, `{"sleep":"1m"}`, result))
	want := "the agent's result was a line of 8030 bytes, over max_line_bytes (4096) of host w, and was dropped: raise max_line_bytes"
	if res.OK || !strings.Contains(res.Error, want) {
		t.Fatalf("result = %+v; want the error %q", res, want)
	}
	// Any other line over the limit is dropped, and the session goes on.
	res = f.run("w", script(`{"raw_bytes":10000}`, result))
	if !res.OK {
		t.Fatalf("after a long line that is no result: %+v", res)
	}
}

func TestInitHandshake(t *testing.T) {
	params := "init_timeout = \"3s\"\n[hosts.%s.params]\nmodel = \"opus\"\n"
	f := start(t, simHost("ack", fmt.Sprintf(params, "ack"))+
		strings.Replace(simHost("refuse", fmt.Sprintf(params, "refuse")), `AGENTMUX_SIM = "1"`, `AGENTMUX_SIM = "1", AGENTMUX_SIM_INIT = "error"`, 1)+
		strings.Replace(simHost("silent", fmt.Sprintf(params, "silent")), `AGENTMUX_SIM = "1"`, `AGENTMUX_SIM = "1", AGENTMUX_SIM_INIT = "silent"`, 1))
	if res := f.run("ack", script(result)); !res.OK {
		t.Fatalf("ack: %+v", res)
	}
	if res := f.run("refuse", script(result)); res.OK || res.Error != "sim: refusing to initialize" {
		t.Fatalf("refuse: %+v", res)
	}
	if res := f.run("silent", script(result)); res.OK || res.Error != "host 'silent' did not acknowledge initialization" {
		t.Fatalf("silent: %+v", res)
	}
}

func TestTwoSessionsOnOneProcess(t *testing.T) {
	f := start(t, simHost("w", "pool = 1\n[hosts.w.params]\nx = 1\n"))
	var numbers []int
	for range 2 {
		res := f.run("w", script(result))
		var p struct {
			SessionNumber int `json:"session_number"`
		}
		if err := json.Unmarshal(res.Payload, &p); err != nil || !res.OK {
			t.Fatalf("result %+v: %v", res, err)
		}
		numbers = append(numbers, p.SessionNumber)
	}
	if numbers[0] != 1 || numbers[1] != 2 {
		t.Fatalf("session numbers %v; want 1 then 2 on the same process", numbers)
	}
	if v := testutil.ToFloat64(f.n.Metrics.AgentStarts.WithLabelValues("w")); v != 1 {
		t.Fatalf("processes started = %v; want 1", v)
	}
}

func Test500ConcurrentSessions(t *testing.T) {
	const sessions = 500
	// A shell agent: one question, then a result carrying the answer line.
	f := start(t, `[hosts.sh]
command = "sh"
args = ["-c", "read p; echo '{\"type\":\"question\",\"id\":\"q\",\"question\":\"go?\"}'; read a; echo \"answered: $a\""]
pool = 500
env = { AGENTMUX_TEST_MARK = "@MARK@" }
[supervisors.s]
strategy = "static"
answers = { question = "yes" }
[[routes]]
supervisor = "s"
`)
	results := make(chan *agent.Result, sessions)
	for range sessions {
		f.n.Submit("sh", "", "go", results)
	}
	for range sessions {
		select {
		case r := <-results:
			if !r.OK || !strings.Contains(string(r.Payload), `\"value\":\"yes\"`) {
				t.Fatalf("session %s: %+v %s", r.Session, r, r.Payload)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("sessions did not all end")
		}
	}
}

// TestNiceLowersTheAgentsPriority: the agents of a host with nice = 7, and what they
// start, run 7 below the node's priority.
func TestNiceLowersTheAgentsPriority(t *testing.T) {
	f := start(t, `[hosts.low]
command = "sh"
args = ["-c", "read p; echo \"nice $(cut -d' ' -f19 /proc/$$/stat) $(cut -d' ' -f19 /proc/self/stat)\""]
nice = 7
`)
	prio, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0) // 20 - the node's niceness
	if err != nil {
		t.Fatal(err)
	}
	want := min(20-prio+7, 19)
	results := make(chan *agent.Result, 1)
	f.n.Submit("low", "", "go", results)
	select {
	case r := <-results:
		if wantText := fmt.Sprintf("nice %d %d", want, want); !r.OK || !strings.Contains(string(r.Payload), wantText) {
			t.Fatalf("result %+v %s; want %q: the agent and its child at niceness %d", r, r.Payload, wantText, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the session did not end")
	}
}

// TestSecondReplyCountedAndAudited: two answerers outside one queue group both reply;
// the agent gets the first, and the second is counted late and audited as refused, with
// who sent it.
func TestSecondReplyCountedAndAudited(t *testing.T) {
	f := start(t, simHost("w", "")+"[supervisors.dup]\nstrategy = \"external\"\n[[routes]]\nsupervisor = \"dup\"\n")
	nc := f.n.Bus.Conn
	first := make(chan struct{})
	for i, who := range []string{"alpha", "beta"} {
		sub, err := nc.Subscribe(wire.AskSubject("dup"), func(m *nats.Msg) {
			if i == 1 {
				<-first // beta answers once alpha has
			}
			data, _ := json.Marshal(&wire.Reply{Value: json.RawMessage(`"from ` + who + `"`), Decider: "rule:" + who})
			if err := m.Respond(data); err != nil {
				t.Errorf("respond: %v", err)
			}
			if i == 0 {
				close(first)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sub.Unsubscribe() })
	}
	res := f.run("w", script(send(`{"type":"question","id":"q1","question":"who?"}`), await("q1"), result))
	if got := answers(t, res); string(got["q1"].Value) != `"from alpha"` {
		t.Fatalf("q1 = %s; want the first reply", got["q1"].Value)
	}
	proctest.Within(t, 10*time.Second, func() error {
		if v := testutil.ToFloat64(f.n.Metrics.LateAnswers.WithLabelValues("w")); v != 1 {
			return fmt.Errorf("late answers = %v", v)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		records, err := store.ReadAudit(ctx, f.n.Bus.JS, res.Session)
		if err != nil {
			return err
		}
		for _, r := range records {
			if r.Kind == "answer.refused" && string(r.Value) == `"from beta"` && r.Decider == "external:dup" && r.Claimed == "rule:beta" {
				return nil
			}
		}
		return fmt.Errorf("no refused answer from beta in %d records", len(records))
	})
}

// TestProgressFloodLosesNoQuestion: ten agents each write 2,000 progress lines around a
// question; every question is answered by its supervisor, every session ends ok, and
// every session's audit keeps the invariants.
func TestProgressFloodLosesNoQuestion(t *testing.T) {
	f := start(t, simHost("w", "pool = 10")+"[supervisors.ok]\nstrategy = \"static\"\nanswers = { question = \"go on\" }\n[[routes]]\nsupervisor = \"ok\"\n")
	var steps []string
	for i := range 2000 {
		steps = append(steps, send(fmt.Sprintf(`{"type":"progress","message":"step %d of a long flood of progress"}`, i)))
		if i == 1000 {
			steps = append(steps, send(`{"type":"question","id":"q1","question":"carry on?"}`))
		}
	}
	prompt := script(append(steps, await("q1"), result)...)
	results := make(chan *agent.Result, 10)
	for range 10 {
		f.n.Submit("w", "", prompt, results)
	}
	for range 10 {
		select {
		case res := <-results:
			got := answers(t, res)
			if !res.OK || string(got["q1"].Value) != `"go on"` || got["q1"].Outcome != "answered" {
				t.Fatalf("session %s: ok %v, q1 %+v; want the supervisor's answer", res.Session, res.OK, got["q1"])
			}
			f.checkAudit(res.Session)
		case <-time.After(60 * time.Second):
			t.Fatal("the flooded sessions did not all end")
		}
	}
}

// A default is never dressed up as a decision: no route, a rule supervisor with no
// matching rule, and a supervisor that fails each give the host's default with outcome
// defaulted, decider default, and a reason naming the supervisor, on the agent's
// response line, in the session's record and in the audit.
func TestDefaultsSayTheyAreDefaults(t *testing.T) {
	f := start(t, simHost("w", "question_default = \"skip\"\napproval_default = \"no\"")+`
[supervisors.policy]
strategy = "rule"
rules = [{ type = "approval", match = "^git status$", answer = "yes" }]
[supervisors.broken]
strategy = "command"
command = "sh"
args = ["-c", "exit 3"]
[[routes]]
type = "approval"
supervisor = "policy"
[[routes]]
match = "(?i)broken"
supervisor = "broken"
`)
	res := f.run("w", script(
		send(`{"type":"question","id":"q1","question":"Which branch?"}`), await("q1"),
		send(`{"type":"approval","id":"a1","description":"rm -rf build"}`), await("a1"),
		send(`{"type":"question","id":"q2","question":"Is the broken test flaky?"}`), await("q2"),
		send(`{"type":"approval","id":"a2","description":"git status"}`), await("a2"), result))
	got := answers(t, res)
	for id, want := range map[string]struct{ value, reason string }{
		"q1": {`"skip"`, "no route matched"},
		"a1": {`"no"`, "rule:policy: no rule matched; host default"},
		"q2": {`"skip"`, "command:broken declined: "},
	} {
		if string(got[id].Value) != want.value || got[id].Outcome != "defaulted" || !strings.HasPrefix(got[id].Reason, want.reason) {
			t.Errorf("%s: the agent was answered %s, %s, %q; want %s, defaulted, %q…", id, got[id].Value, got[id].Outcome, got[id].Reason, want.value, want.reason)
		}
		if r := record(res, id); r.Decider != "default" || r.Outcome != "defaulted" {
			t.Errorf("%s recorded as decided by %q with outcome %q; want default, defaulted", id, r.Decider, r.Outcome)
		}
	}
	if got["a2"].Outcome != "answered" || record(res, "a2").Decider != "rule:policy" {
		t.Errorf("a2, which a rule matched: %s by %s; want answered by rule:policy", got["a2"].Outcome, record(res, "a2").Decider)
	}
	records, err := store.ReadAudit(context.Background(), f.n.Bus.JS, res.Session)
	if err != nil {
		t.Fatal(err)
	}
	audited := map[string]*wire.AuditRecord{}
	for _, r := range records {
		if r.Kind == "answer" {
			audited[r.Request] = r
		}
	}
	for _, id := range []string{"q1", "a1", "q2"} {
		if r := audited[id]; r == nil || r.Decider != "default" || r.Outcome != "defaulted" {
			t.Errorf("audit of %s: %+v; want decider default, outcome defaulted", id, r)
		}
	}
}

// Two live nodes of one name would answer each other's control requests and overwrite
// each other's heartbeat: the second is refused, saying why, once it has seen the first
// beat again; another name is fine.
func TestTwoLiveNodesMayNotShareAName(t *testing.T) {
	t.Setenv("T_PEER_PASSWORD", nuid.Next())
	a := start(t, simHost("w", "")+peerUser) // named "test"
	peer := peerOf(a) + simHost("w", "")
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	twin, err := Start(ctx, Options{Manifest: a.parsed(peer), Log: log, Ephemeral: true, MetricsAddr: "-", Name: "test", NoTasks: true})
	if err == nil {
		_ = twin.Stop(ctx)
		t.Fatal("a second live node named test started")
	}
	if !strings.Contains(err.Error(), `another node named "test" is running`) || !strings.Contains(err.Error(), "give this one another --name") {
		t.Fatalf("the twin was refused with %v; want it to say another node of its name runs", err)
	}
	start(t, peer, func(o *Options) { o.Name = "other"; o.NoTasks = true })
}

// store_dir = ":memory:" is a temporary store, said to be one, and gone when the node
// stops; it is never a folder named ":memory:".
func TestMemoryStoreIsTemporaryAndSaysSo(t *testing.T) {
	var logged strings.Builder
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logged.Write(p)
	}), &slog.HandlerOptions{Level: slog.LevelWarn}))
	m, err := config.Parse(filepath.Join(t.TempDir(), "m.toml"), []byte("[nats]\nlisten = \"127.0.0.1:0\"\nstore_dir = \":memory:\"\n[supervisors.s]\nstrategy = \"static\"\nanswers = { question = \"x\" }\n"))
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	n, err := Start(context.Background(), Options{Manifest: m, Log: log, MetricsAddr: "-", Name: "mem", StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	dir := n.Bus.Server().JetStreamConfig().StoreDir
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(dir, ":memory:") || strings.HasPrefix(dir, state) {
		t.Errorf("the store was %s; want a temporary directory", dir)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the temporary store %s outlived the node: %v", dir, err)
	}
	if _, err := os.Stat(config.MemoryStore); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the node made a folder named %q in its working directory (%v)", config.MemoryStore, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logged.String(), "are gone when it stops") {
		t.Errorf("the node did not say its store is temporary:\n%s", logged.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
