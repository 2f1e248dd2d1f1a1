package main

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nuid"

	"github.com/agentmux/agentmux/internal/invariants"
	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/node"
	"github.com/agentmux/agentmux/wire"
)

// TestMain doubles as the runtime binary: with AGENTMUX_RUNTIME_MAIN set, the test binary
// is `runtime` (the os/exec helper-process pattern), so the CLI tests run real processes
// without a build step.
func TestMain(m *testing.M) {
	if os.Getenv("AGENTMUX_RUNTIME_MAIN") != "" {
		os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
	}
	// The local operators' credentials of the nodes the tests start, which the CLI
	// finds there; every process the tests start inherits it.
	state, err := os.MkdirTemp("", "agentmux-test-state-")
	if err != nil {
		panic(err)
	}
	if err := os.Setenv("AGENTMUX_STATE_DIR", state); err != nil {
		panic(err)
	}
	// No context of the user's own: the tests name their fleets.
	for name, value := range map[string]string{"AGENTMUX_CONFIG_DIR": filepath.Join(state, "config"), "AGENTMUX_CONTEXT": "", "AGENTMUX_SERVER": ""} {
		if err := os.Setenv(name, value); err != nil {
			panic(err)
		}
	}
	// The secured fleets' passwords, which every process the tests start inherits.
	for _, name := range []string{"AGENTMUX_TEST_FLEET_PASSWORD", "AGENTMUX_TEST_ROUTE_PASSWORD"} {
		if err := os.Setenv(name, nuid.Next()); err != nil {
			panic(err)
		}
	}
	code := m.Run()
	_ = os.RemoveAll(state)
	os.Exit(proctest.ExitCode(code))
}

// syncBuffer is an output the test reads while the process writes it.
type syncBuffer = proctest.Buffer

type proc struct {
	cmd            *exec.Cmd
	stdout, stderr *syncBuffer
	done           chan struct{}
	code           int
}

// runtimeProc starts `runtime args…` as a real process.
func runtimeProc(t testing.TB, args ...string) *proc {
	t.Helper()
	return startProc(t, exec.Command(os.Args[0], args...))
}

// startProc starts cmd, which runs this binary as `runtime`, and stops it at cleanup.
// A node it starts as root (up, run) has its manifest's agents run as root
// (agentsAsRoot).
func startProc(t testing.TB, cmd *exec.Cmd) *proc {
	t.Helper()
	if len(cmd.Args) > 1 && cmd.Args[0] == os.Args[0] && (cmd.Args[1] == "up" || cmd.Args[1] == "run") {
		if i := slices.Index(cmd.Args, "-c"); i > 0 && i+1 < len(cmd.Args) {
			agentsAsRoot(t, cmd.Args[i+1])
		}
	}
	p := &proc{cmd: cmd, stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Env = append(append(os.Environ(), cmd.Env...), "AGENTMUX_RUNTIME_MAIN=1") // later entries win
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// hostHeader is a line that opens a host's table in a manifest.
var hostHeader = regexp.MustCompile(`^\[(hosts|agents)\.[A-Za-z0-9_-]+\]\s*$`)

// userKey is a line that says a table's user.
var userKey = regexp.MustCompile(`^\s*user\s*=`)

// agentsAsRoot has the hosts of the manifest at path that name no user say user =
// "root" when the tests run as root (as in CI), where a node refuses an agent with no
// user: what a test's agents may do is its sandbox's to decide, as it is for a node run
// as a user. The tests that play a root node's agents say who they run as themselves.
func agentsAsRoot(t testing.TB, path string) {
	t.Helper()
	if os.Geteuid() != 0 {
		return
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var out []string
	for i, line := range lines {
		out = append(out, line)
		if !hostHeader.MatchString(line) {
			continue
		}
		said := false
		for _, next := range lines[i+1:] {
			if strings.HasPrefix(next, "[") {
				break
			}
			said = said || userKey.MatchString(next)
		}
		if !said {
			out = append(out, `user = "root"`)
		}
	}
	if err := os.WriteFile(path, []byte(strings.Join(out, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// wait waits for the process to exit and returns its exit code.
func (p *proc) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(d):
		t.Fatalf("%v did not exit within %v\nstderr:\n%s", p.cmd.Args[1:], d, p.stderr)
		return -1
	}
}

// until polls out until it contains want, for up to 20 s.
func until(t testing.TB, what string, out *syncBuffer, want string) {
	t.Helper()
	untilWithin(t, what, out, want, 20*time.Second)
}

// untilWithin polls out until it contains want, for up to d.
func untilWithin(t testing.TB, what string, out *syncBuffer, want string, d time.Duration) {
	t.Helper()
	proctest.Within(t, d, func() error {
		if strings.Contains(out.String(), want) {
			return nil
		}
		return fmt.Errorf("%s: %q never appeared in:\n%s", what, want, out)
	})
}

// nodeManifest is a manifest for a node on its own port and store, whose host runs
// this binary as `agentmux sim`.
func nodeManifest(t *testing.T) string {
	dir := t.TempDir()
	m := fmt.Sprintf(`[nats]
listen = "127.0.0.1:%d"
store_dir = %q
[metrics]
addr = "127.0.0.1:0"
[hosts.w]
command = %q
args = ["sim"]
env = { AGENTMUX_RUNTIME_MAIN = "1" }
question_timeout = "2m"
stop_grace = "2s"
[hosts.w.params]
model = "sim"
[supervisors.qa]
strategy = "rule"
rules = [{ type = "question", match = "tests", answer = "yes" }]
[supervisors.nobody]
strategy = "external"
[supervisors.oncall]
strategy = "human"
[[routes]]
match = "(?i)anyone"
supervisor = "nobody"
[[routes]]
match = "(?i)deploy"
supervisor = "oncall"
[[routes]]
supervisor = "qa"
`, proctest.FreePort(t), filepath.Join(dir, "store"), os.Args[0])
	path := filepath.Join(dir, "agentmux.toml")
	if err := os.WriteFile(path, []byte(m), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const (
	okScript      = `{"steps":[{"send":{"type":"progress","message":"working"}},{"send":{"type":"question","id":"q1","question":"Run the tests?"}},{"await":"q1"},{"result":"all green"}]}`
	failScript    = `{"steps":[{"error":"cannot do that"}]}`
	pendingScript = `{"steps":[{"send":{"type":"question","id":"q1","question":"Is anyone there?"}},{"await":"q1"},{"result":"answered"}]}`
)

// TestSubmitToAHostNoNodeRuns: a task for a host no live node runs is queued with a
// warning (exit 0), and --follow gives up at --timeout, saying so, with exit 1.
func TestSubmitToAHostNoNodeRuns(t *testing.T) {
	t.Parallel()
	manifest := nodeManifest(t)
	up := runtimeProc(t, "up", "-c", manifest, "--no-hosts")
	until(t, "agentmux up", up.stderr, "node up")
	queued := runtimeProc(t, "submit", "-c", manifest, "--id", "t-nobody", "w", okScript)
	if code := queued.wait(t, 30*time.Second); code != exitOK || !strings.Contains(queued.stderr.String(), "no live node runs host 'w' now") {
		t.Fatalf("submit to an unserved host: exit %d, stderr:\n%s", code, queued.stderr)
	}
	followed := runtimeProc(t, "submit", "-c", manifest, "--id", "t-nobody-2", "w", okScript, "--follow", "--timeout", "1s")
	if code := followed.wait(t, 30*time.Second); code != exitError || !strings.Contains(followed.stderr.String(), "did not end within --timeout 1s") {
		t.Fatalf("submit --follow --timeout to an unserved host: exit %d, stderr:\n%s", code, followed.stderr)
	}

	// With --ttl, a task nobody starts leaves the queue; --follow says so.
	short := runtimeProc(t, "submit", "-c", manifest, "--id", "t-ttl", "w", okScript, "--ttl", "500ms")
	if code := short.wait(t, 30*time.Second); code != exitUsage || !strings.Contains(short.stderr.String(), "the queue keeps a task for 1s at the least") {
		t.Fatalf("submit --ttl 500ms: exit %d, stderr:\n%s", code, short.stderr)
	}
	expiring := runtimeProc(t, "submit", "-c", manifest, "--id", "t-ttl", "w", okScript, "--ttl", "2s", "--follow")
	if code := expiring.wait(t, 30*time.Second); code != exitError || !strings.Contains(expiring.stderr.String(), "no node started the task within --ttl 2s: the work queue dropped it") {
		t.Fatalf("submit --ttl 2s --follow to an unserved host: exit %d, stderr:\n%s", code, expiring.stderr)
	}
	tasks := runtimeProc(t, "tasks", "-c", manifest)
	if code := tasks.wait(t, 30*time.Second); code != exitOK || strings.Contains(tasks.stdout.String(), "t-ttl") || !strings.Contains(tasks.stdout.String(), "t-nobody-2") {
		t.Fatalf("tasks after the TTL: exit %d; want t-ttl gone and t-nobody-2 waiting\n%s%s", code, tasks.stdout, tasks.stderr)
	}
}

func TestUpSubmitWatchAndGracefulStop(t *testing.T) {
	t.Parallel()
	manifest := nodeManifest(t)
	up := runtimeProc(t, "up", "-c", manifest, "--grace", "1s")
	until(t, "agentmux up", up.stderr, "node up")
	watch := runtimeProc(t, "watch", "-c", manifest)

	// submit --follow: events on stderr, the result on stdout, exit 0.
	ok := runtimeProc(t, "submit", "-c", manifest, "--id", "t-ok", "w", okScript, "--follow")
	if code := ok.wait(t, 30*time.Second); code != exitOK {
		t.Fatalf("submit --follow exit %d\nstderr:\n%s", code, ok.stderr)
	}
	if out := ok.stdout.String(); !strings.Contains(out, `"text":"all green"`) || !strings.Contains(out, `"value":"yes"`) {
		t.Fatalf("result on stdout: %s", out)
	}
	for _, want := range []string{`agentmux.evt.w.t-ok.session.started`, `agentmux.evt.w.t-ok.progress`, `agentmux.evt.w.t-ok.request.answered`, `"decider":"rule:qa"`, `agentmux.evt.w.t-ok.session.ended`} {
		if !strings.Contains(ok.stderr.String(), want) {
			t.Errorf("submit --follow events lack %s:\n%s", want, ok.stderr)
		}
	}

	// An agent error: exit 1 with the message.
	fail := runtimeProc(t, "submit", "-c", manifest, "--id", "t-fail", "w", failScript, "--follow")
	if code := fail.wait(t, 30*time.Second); code != exitError || !strings.Contains(fail.stderr.String(), "cannot do that") {
		t.Fatalf("failing session: exit %d\nstderr:\n%s", code, fail.stderr)
	}

	// Without --follow: the task id, exit 0; watch sees every session.
	plain := runtimeProc(t, "submit", "-c", manifest, "--id", "t-plain", "w", okScript)
	if code := plain.wait(t, 30*time.Second); code != exitOK || strings.TrimSpace(plain.stdout.String()) != "t-plain" || plain.stderr.String() != "" {
		t.Fatalf("submit: exit %d, stdout %q, stderr %q", code, plain.stdout, plain.stderr)
	}
	for _, id := range []string{"t-ok", "t-fail", "t-plain"} {
		until(t, "watch", watch.stdout, `"subject":"agentmux.evt.w.`+id+`.session.ended"`)
	}

	// The same id again: not queued, exit 1, saying what became of the first.
	dup := runtimeProc(t, "submit", "-c", manifest, "--id", "t-ok", "w", okScript)
	if code := dup.wait(t, 30*time.Second); code != exitError || !strings.Contains(dup.stderr.String(), "task t-ok was submitted already") ||
		!strings.Contains(dup.stderr.String(), "it ended ok at") || dup.stdout.String() != "" {
		t.Fatalf("a task id submitted again: exit %d, stdout %q, stderr:\n%s", code, dup.stdout, dup.stderr)
	}

	// SIGTERM with a request pending: answered cancelled, session ended, exit 0.
	pending := runtimeProc(t, "submit", "-c", manifest, "--id", "t-pending", "w", pendingScript, "--follow")
	until(t, "pending question", watch.stdout, `"subject":"agentmux.evt.w.t-pending.question"`)
	if err := up.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := up.wait(t, 30*time.Second); code != exitOK {
		t.Fatalf("agentmux up after SIGTERM: exit %d\nstderr:\n%s", code, up.stderr)
	}
	if code := pending.wait(t, 10*time.Second); code != exitError || !strings.Contains(pending.stderr.String(), "runtime shutting down") {
		t.Fatalf("pending session: exit %d\nstderr:\n%s", code, pending.stderr)
	}
	if !strings.Contains(pending.stderr.String(), `"outcome":"cancelled"`) {
		t.Fatalf("the pending request was not answered cancelled:\n%s", pending.stderr)
	}
	// watch outlives the node: it says so and reconnects, until it is stopped.
	until(t, "watch", watch.stderr, "agentmux watch: disconnected")
	if err := watch.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := watch.wait(t, 10*time.Second); code != exitOK {
		t.Fatalf("watch after SIGTERM: exit %d, stderr %q", code, watch.stderr)
	}

	// The audit was flushed before the exit: a node started again on the store has the
	// stopped session's request, its cancelled answer and its end, and every invariant.
	again := runtimeProc(t, "up", "-c", manifest)
	until(t, "agentmux up again", again.stderr, "node up")
	audit := runtimeProc(t, "audit", "-c", manifest, "t-pending", "--json")
	if code := audit.wait(t, 10*time.Second); code != exitOK {
		t.Fatalf("audit after the restart: exit %d, %s", code, audit.stderr)
	}
	var records []wire.AuditRecord
	kinds := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(audit.stdout.String()), "\n") {
		var r wire.AuditRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		records = append(records, r)
		if r.Attempt == 0 {
			kinds[r.Kind] = r.Outcome
		}
	}
	if kinds["request"] != "" || kinds["answer"] != "cancelled" || kinds["session.ended"] != "error" {
		t.Fatalf("the stopped attempt's audit: %v", kinds)
	}
	for _, v := range invariants.Violations(records, nil) {
		t.Errorf("audit of the stopped session: %s", v)
	}
}

func TestRunPrintsEventsAndResult(t *testing.T) {
	t.Parallel()
	manifest := nodeManifest(t)
	p := runtimeProc(t, "run", "-c", manifest, "--events", "w", okScript)
	if code := p.wait(t, 30*time.Second); code != exitOK {
		t.Fatalf("run: exit %d\n%s", code, p.stderr)
	}
	if !strings.Contains(p.stdout.String(), `"text":"all green"`) {
		t.Fatalf("stdout: %s", p.stdout)
	}
	// Every event line on stderr is JSON with a subject.
	var events int
	sc := bufio.NewScanner(strings.NewReader(p.stderr.String()))
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), `{"subject":"agentmux.evt.w.`) {
			events++
		}
	}
	if events < 4 {
		t.Fatalf("%d events on stderr:\n%s", events, p.stderr)
	}
	f := runtimeProc(t, "run", "-c", manifest, "w", failScript)
	if code := f.wait(t, 30*time.Second); code != exitError {
		t.Fatalf("failing run: exit %d\n%s", code, f.stderr)
	}
}

const humanScript = `{"steps":[{"send":{"type":"approval","id":"a1","description":"deploy v2 to prod"}},{"await":"a1"},{"result":"deployed"}]}`

func TestHumanPendingRespondAndAudit(t *testing.T) {
	t.Parallel()
	manifest := nodeManifest(t)
	up := runtimeProc(t, "up", "-c", manifest)
	until(t, "agentmux up", up.stderr, "node up")
	follow := runtimeProc(t, "submit", "-c", manifest, "--id", "t-human", "w", humanScript, "--follow")

	// The approval waits for a person: `pending` shows it.
	var id string
	proctest.EventuallyWithin(t, 20*time.Second, "the approval shows in agentmux pending", func() bool {
		p := runtimeProc(t, "pending", "-c", manifest, "--json")
		if code := p.wait(t, 10*time.Second); code != exitOK {
			t.Fatalf("pending: exit %d: %s", code, p.stderr)
		}
		for _, line := range strings.Split(p.stdout.String(), "\n") {
			var rec struct{ ID, Session, Text, Supervisor string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Session == "t-human" {
				if rec.Text != "deploy v2 to prod" || rec.Supervisor != "oncall" {
					t.Fatalf("pending entry %s", line)
				}
				id = rec.ID
			}
		}
		return id != ""
	})
	table := runtimeProc(t, "pending", "-c", manifest)
	table.wait(t, 10*time.Second)
	if !strings.Contains(table.stdout.String(), id) || !strings.Contains(table.stdout.String(), "approval: deploy v2 to prod") {
		t.Fatalf("pending table:\n%s", table.stdout)
	}

	bad := runtimeProc(t, "respond", "-c", manifest, id, "maybe")
	if code := bad.wait(t, 10*time.Second); code != exitUsage || !strings.Contains(bad.stderr.String(), `an approval is answered "yes" or "no"`) {
		t.Fatalf("respond maybe: exit %d, %s", code, bad.stderr)
	}
	// The start of the id will do: "h-" and a few characters.
	ok := runtimeProc(t, "respond", "-c", manifest, "--as", "alice", id[:6], "yes")
	if code := ok.wait(t, 10*time.Second); code != exitOK || !strings.Contains(ok.stdout.String(), "answered "+id) {
		t.Fatalf("respond by the start of the id: exit %d, %s%s", code, ok.stdout, ok.stderr)
	}
	// The CLI found the whole id: the node was never asked about the start of one.
	if strings.Contains(up.stderr.String(), "no_such_request") {
		t.Errorf("the node logged a refusal for the start of the id:\n%s", up.stderr)
	}
	again := runtimeProc(t, "respond", "-c", manifest, "--as", "bob", id, "no")
	if code := again.wait(t, 10*time.Second); code != exitError || !strings.Contains(again.stderr.String(), "already answered by alice") {
		t.Fatalf("second respond: exit %d, %s", code, again.stderr)
	}
	malformed := runtimeProc(t, "respond", "-c", manifest, "h-*", "yes")
	if code := malformed.wait(t, 10*time.Second); code != exitUsage || !strings.Contains(malformed.stderr.String(), `"h-*" is not a request id`) {
		t.Fatalf("respond to a malformed id: exit %d, %s", code, malformed.stderr)
	}
	missing := runtimeProc(t, "respond", "-c", manifest, "h-nonexistent", "yes")
	if code := missing.wait(t, 10*time.Second); code != exitUsage || !strings.Contains(missing.stderr.String(), "no such pending request") {
		t.Fatalf("respond to nothing: exit %d, %s", code, missing.stderr)
	}

	if code := follow.wait(t, 30*time.Second); code != exitOK || !strings.Contains(follow.stdout.String(), `"a1":{"value":"yes","outcome":"answered"`) {
		t.Fatalf("session: exit %d\nstdout %s\nstderr %s", code, follow.stdout, follow.stderr)
	}
	if !strings.Contains(follow.stderr.String(), `"decider":"human:alice"`) {
		t.Fatalf("the answer event does not name alice:\n%s", follow.stderr)
	}

	// The audit trail, in order; records are published asynchronously, so poll.
	proctest.Within(t, 20*time.Second, func() error {
		a := runtimeProc(t, "audit", "-c", manifest, "t-human", "--json")
		a.wait(t, 10*time.Second)
		var kinds []string
		var decider string
		for _, line := range strings.Split(strings.TrimSpace(a.stdout.String()), "\n") {
			var rec struct{ Kind, Decider string }
			if json.Unmarshal([]byte(line), &rec) == nil {
				kinds = append(kinds, rec.Kind)
				if rec.Kind == "answer" {
					decider = rec.Decider
				}
			}
		}
		if strings.Join(kinds, ",") == "session.started,request,answer,session.ended" {
			if decider != "human:alice" {
				t.Fatalf("audit answer decided by %q", decider)
			}
			return nil
		}
		return fmt.Errorf("audit trail %v", kinds)
	})
	text := runtimeProc(t, "audit", "-c", manifest, "t-hum") // the start of the session's id
	text.wait(t, 10*time.Second)
	if out := text.stdout.String(); !strings.Contains(out, `"yes" answered by human:alice`) || !strings.Contains(out, "approval: deploy v2 to prod") || !strings.Contains(out, "session.ended") || !strings.Contains(out, "ok on node") {
		t.Fatalf("audit table:\n%s", out)
	}
	nothing := runtimeProc(t, "audit", "-c", manifest, "t-nope")
	if code := nothing.wait(t, 10*time.Second); code != exitError || !strings.Contains(nothing.stderr.String(), `no audit records for session "t-nope", nor for a session whose id starts with it`) {
		t.Fatalf("audit of nothing: exit %d, %s", code, nothing.stderr)
	}
	// A second session makes "t-" the start of two ids: it is refused, naming both.
	second := runtimeProc(t, "submit", "-c", manifest, "--id", "t-other", "w", okScript, "--follow")
	if code := second.wait(t, 30*time.Second); code != exitOK {
		t.Fatalf("t-other: exit %d, %s", code, second.stderr)
	}
	proctest.Eventually(t, `"t-" refused as the start of two sessions' ids`, func() bool {
		ambiguous := runtimeProc(t, "audit", "-c", manifest, "t-")
		return ambiguous.wait(t, 10*time.Second) == exitError && strings.Contains(ambiguous.stderr.String(), `"t-" starts 2 sessions' ids (t-human, t-other)`)
	})

	// Searching across sessions: who approved what, as CSV and JSON; the table names
	// each record's session; times are checked.
	auditOut := func(args ...string) (int, string, string) {
		a := runtimeProc(t, append([]string{"audit", "-c", manifest}, args...)...)
		code := a.wait(t, 30*time.Second)
		return code, a.stdout.String(), a.stderr.String()
	}
	code, out, stderr := auditOut("--decider", "human", "-o", "csv")
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if code != exitOK || err != nil || len(rows) != 2 || rows[0][1] != "session" || rows[1][1] != "t-human" || rows[1][9] != "approval" ||
		rows[1][11] != `"yes"` || rows[1][13] != "human:alice" {
		t.Fatalf("audit --decider human -o csv: exit %d, %v\n%s%s", code, err, out, stderr)
	}
	code, out, _ = auditOut("--by", "alice", "--kind", "answer", "-o", "json")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); code != exitOK || len(lines) != 1 || !strings.Contains(lines[0], `"session":"t-human"`) {
		t.Fatalf("audit --by alice: exit %d\n%s", code, out)
	}
	code, out, _ = auditOut("--since", "1h", "--host", "w", "--kind", "session.ended")
	if code != exitOK || !strings.Contains(out, "SESSION") || !strings.Contains(out, "t-human") || !strings.Contains(out, "t-other") {
		t.Fatalf("audit --since 1h: exit %d\n%s", code, out)
	}
	if code, out, _ := auditOut("--until", "2020-01-01T00:00:00Z", "--since", "2019-01-01T00:00:00Z"); code != exitOK || !strings.Contains(out, "no audit records match") {
		t.Fatalf("audit of a time with nothing: exit %d\n%s", code, out)
	}
	if code, _, stderr := auditOut("--since", "yesterday"); code != exitUsage || !strings.Contains(stderr, `--since "yesterday": want a duration before now`) {
		t.Fatalf("audit --since yesterday: exit %d %s", code, stderr)
	}
}

// TestSIGHUPReloadsTheManifest: a SIGHUP (systemctl reload) makes the node run the
// manifest file as it is now: a changed rule answers the next session. A manifest that
// does not load is refused with its errors in the log, and the node runs on with the
// one before, until SIGTERM stops it as ever.
func TestSIGHUPReloadsTheManifest(t *testing.T) {
	t.Parallel()
	manifest := nodeManifest(t)
	original, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	up := runtimeProc(t, "up", "-c", manifest)
	until(t, "agentmux up", up.stderr, "node up")
	// The CLI reads a copy: the node's own file is broken on purpose below.
	cli := filepath.Join(t.TempDir(), "cli.toml")
	if err := os.WriteFile(cli, original, 0o600); err != nil {
		t.Fatal(err)
	}
	answered := func(id, want string) {
		t.Helper()
		run := runtimeProc(t, "submit", "-c", cli, "--id", id, "w", okScript, "--follow")
		if code := run.wait(t, 30*time.Second); code != exitOK || !strings.Contains(run.stdout.String(), `"value":`+want) {
			t.Fatalf("session %s: exit %d, stdout %s; want the question answered %s\nstderr:\n%s", id, code, run.stdout, want, run.stderr)
		}
	}
	answered("t-before", `"yes"`)

	changed := strings.Replace(string(original), `match = "tests", answer = "yes"`, `match = "tests", answer = "not today"`, 1)
	if err := os.WriteFile(manifest, []byte(changed), 0o600); err != nil {
		t.Fatal(err)
	}
	agentsAsRoot(t, manifest)
	if err := up.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	until(t, "the reload", up.stderr, "manifest reloaded")
	answered("t-after", `"not today"`)

	broken := strings.Replace(changed, `question_timeout = "2m"`, `question_timout = "2m"`, 1)
	if err := os.WriteFile(manifest, []byte(broken), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := up.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	until(t, "the refused reload", up.stderr, "SIGHUP: manifest not reloaded")
	until(t, "the refused reload's reason", up.stderr, `unknown key \"question_timout\"`)
	answered("t-refused", `"not today"`)

	if err := up.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := up.wait(t, 60*time.Second); code != exitOK {
		t.Fatalf("up after SIGTERM: exit %d\n%s", code, up.stderr)
	}
}

// TestUpLogsJSON: --log-format json writes one JSON object a line, for a log
// collector; an unknown format is a usage error.
func TestUpLogsJSON(t *testing.T) {
	t.Parallel()
	manifest := nodeManifest(t)
	bad := runtimeProc(t, "up", "-c", manifest, "--log-format", "xml")
	if code := bad.wait(t, 20*time.Second); code != exitUsage || !strings.Contains(bad.stderr.String(), `--log-format "xml": use text or json`) {
		t.Fatalf("up --log-format xml: exit %d, stderr %q", code, bad.stderr)
	}
	up := runtimeProc(t, "up", "-c", manifest, "--log-format", "json")
	until(t, "agentmux up", up.stderr, `"msg":"node up"`)
	for _, line := range strings.Split(strings.TrimSpace(up.stderr.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil || rec["level"] == nil || rec["msg"] == nil {
			t.Fatalf("a log line that is not a JSON record with level and msg: %q (%v)", line, err)
		}
	}
}

// TestUpKeepsItsStoreAndNameByDefault: with no store_dir, `up` keeps its store in its
// state directory under its host name, so a node killed with -9 and started again has
// the audit of what ran before: the restart takes the name once the old heartbeat
// stops, and loses nothing.
func TestUpKeepsItsStoreAndNameByDefault(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	path := nodeManifest(t)
	m, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	kept := regexp.MustCompile(`(?m)^store_dir = .*\n`).ReplaceAllString(string(m), "")
	if err := os.WriteFile(path, []byte(kept), 0o600); err != nil {
		t.Fatal(err)
	}
	withState := func(args ...string) *proc {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = []string{"AGENTMUX_STATE_DIR=" + state}
		return startProc(t, cmd)
	}
	name := node.HostName()
	up := withState("up", "-c", path)
	until(t, "agentmux up", up.stderr, "node up")
	store := filepath.Join(state, name, "nats")
	if log := up.stderr.String(); !strings.Contains(log, "node="+name) || !strings.Contains(log, "store="+store) {
		t.Fatalf("up did not run as %s on %s:\n%s", name, store, log)
	}
	run := withState("submit", "-c", path, "--id", "t-kept", "w", okScript, "--follow")
	if code := run.wait(t, 30*time.Second); code != exitOK {
		t.Fatalf("submit: exit %d\n%s", code, run.stderr)
	}
	if err := up.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	up.wait(t, 10*time.Second)

	again := withState("up", "-c", path)
	until(t, "agentmux up again", again.stderr, "node up")
	if log := again.stderr.String(); !strings.Contains(log, "this one takes its place") {
		t.Errorf("the restart did not wait out its killed predecessor's heartbeat:\n%s", log)
	}
	audit := withState("audit", "-c", path, "t-kept")
	if code := audit.wait(t, 10*time.Second); code != exitOK || !strings.Contains(audit.stdout.String(), "session.ended") || !strings.Contains(audit.stdout.String(), "ok on node "+name) {
		t.Fatalf("audit after a kill -9 and a restart: exit %d\n%s%s", code, audit.stdout, audit.stderr)
	}
	// The session's events are kept too: logs shows a finished session's, after the
	// restart, by the start of its id.
	logs := withState("logs", "-c", path, "t-ke")
	if code := logs.wait(t, 10*time.Second); code != exitOK || !regexp.MustCompile(`(?s)session.started.*progress .*working.*question .*Run the tests.*request.answered.*session.ended`).MatchString(logs.stdout.String()) {
		t.Fatalf("logs of a finished session after a restart: exit %d\n%s%s", code, logs.stdout, logs.stderr)
	}
	// logs -f waits for a session not started yet, follows it, and ends with it.
	follow := withState("logs", "-c", path, "-f", "t-later", "-o", "json")
	run = withState("submit", "-c", path, "--id", "t-later", "w", okScript)
	if code := run.wait(t, 30*time.Second); code != exitOK {
		t.Fatalf("submit t-later: exit %d\n%s", code, run.stderr)
	}
	if code := follow.wait(t, 30*time.Second); code != exitOK {
		t.Fatalf("logs -f: exit %d\n%s", code, follow.stderr)
	}
	lines := strings.Split(strings.TrimSpace(follow.stdout.String()), "\n")
	var first, last struct{ Type, Session string }
	if json.Unmarshal([]byte(lines[0]), &first) != nil || json.Unmarshal([]byte(lines[len(lines)-1]), &last) != nil ||
		first.Type != "session.started" || last.Type != "session.ended" || last.Session != "t-later" {
		t.Fatalf("logs -f -o json: from %+v to %+v\n%s", first, last, follow.stdout)
	}
}

// TestSteeringTheFleetFromTheCLI: sessions and tasks list what runs and what waits;
// message and interrupt reach a running session by the start of its id; drain and
// undrain stop and restart a node's intake.
func TestSteeringTheFleetFromTheCLI(t *testing.T) {
	t.Parallel()
	manifest := nodeManifest(t)
	up := runtimeProc(t, "up", "-c", manifest, "--name", "steer")
	until(t, "agentmux up", up.stderr, "node up")
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		p := runtimeProc(t, append(args[:1:1], append([]string{"-c", manifest}, args[1:]...)...)...)
		code := p.wait(t, 30*time.Second)
		return code, p.stdout.String(), p.stderr.String()
	}
	long := runtimeProc(t, "submit", "-c", manifest, "--id", "t-long-1", "w", pendingScript, "--follow")
	until(t, "the long session's question", long.stderr, "t-long-1.question")
	// t-next's agent says what its model calls cost: listed once it ended.
	spent := strings.Replace(okScript, `{"result":"all green"}`, `{"send":{"type":"usage","model":"m","input_tokens":1200,"output_tokens":300,"cost_usd":0.0123}},{"result":"all green"}`, 1)
	if code, _, stderr := cli("submit", "--id", "t-next", "w", spent); code != exitOK {
		t.Fatalf("submit t-next: %d %s", code, stderr)
	}

	code, out, stderr := cli("sessions", "-o", "json")
	var listed []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var s map[string]any
		if json.Unmarshal([]byte(line), &s) == nil {
			listed = append(listed, s)
		}
	}
	if code != exitOK || len(listed) != 1 || listed[0]["session"] != "t-long-1" || listed[0]["node"] != "steer" || listed[0]["state"] != "running" {
		t.Fatalf("sessions -o json: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, _ := cli("sessions", "--state", "queued"); code != exitOK || !strings.Contains(out, "no session is running, queued or paused") {
		t.Errorf("sessions --state queued: exit %d\n%s", code, out)
	}
	code, out, stderr = cli("tasks", "-o", "wide")
	if code != exitOK || !regexp.MustCompile(`t-long-1\s+w\s+running\s+steer`).MatchString(out) || !regexp.MustCompile(`t-next\s+w\s+waiting\s+-`).MatchString(out) {
		t.Fatalf("tasks: exit %d\n%s%s", code, out, stderr)
	}

	if code, _, stderr := cli("message", "t-nope", "hello"); code != exitError || !strings.Contains(stderr, `no running or queued session is "t-nope" or starts with it`) {
		t.Errorf("message to no session: exit %d %s", code, stderr)
	}
	if code, out, stderr := cli("message", "t-long", "use the staging database"); code != exitOK || !strings.Contains(out, "t-long-1 on steer:") {
		t.Fatalf("message by an id's start: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := cli("interrupt", "t-long", "--reason", "wrong branch"); code != exitOK || !strings.Contains(out, "t-long-1 on steer:") {
		t.Fatalf("interrupt: exit %d\n%s%s", code, out, stderr)
	}
	long.wait(t, 30*time.Second)
	if res := long.stdout.String(); !strings.Contains(res, `"interrupted":true`) || !strings.Contains(res, "use the staging database") {
		t.Fatalf("the interrupted session's result does not show the message and the interrupt:\n%s\n%s", res, long.stderr)
	}

	// t-next runs once the slot is free; then the node drains, and undrains.
	proctest.Eventually(t, "t-next done", func() bool {
		code, out, _ := cli("tasks")
		return code == exitOK && strings.Contains(out, "the work queue is empty")
	})
	// Sessions that ended, from the audit: how, where, and when.
	proctest.Eventually(t, "both ended sessions listed", func() bool {
		code, out, _ := cli("sessions", "--state", "ended", "-o", "wide")
		return code == exitOK && regexp.MustCompile(`t-long-1\s+w\s+steer\s+ended ok.*\s-\s+-\s`).MatchString(out) &&
			regexp.MustCompile(`t-next\s+w\s+steer\s+ended ok.*\$0\.0123\s+1500\s`).MatchString(out)
	})
	if code, _, stderr := cli("sessions", "--state", "done"); code != exitUsage || !strings.Contains(stderr, `--state "done": want running, queued, paused or ended`) {
		t.Errorf("sessions --state done: exit %d %s", code, stderr)
	}
	hold := runtimeProc(t, "submit", "-c", manifest, "--id", "t-hold", "w", pendingScript, "--follow")
	until(t, "a session to drain around", hold.stderr, "t-hold.question")
	if code, out, stderr := cli("drain", "steer", "--grace", "5m"); code != exitOK || !strings.Contains(out, "draining") {
		t.Fatalf("drain: exit %d\n%s%s", code, out, stderr)
	}
	proctest.Eventually(t, "the node draining in its heartbeat", func() bool {
		_, out, _ := cli("nodes")
		return regexp.MustCompile(`steer\s+draining`).MatchString(out)
	})
	if code, out, stderr := cli("undrain", "steer"); code != exitOK || !strings.Contains(out, "steer: taking tasks again") {
		t.Fatalf("undrain: exit %d\n%s%s", code, out, stderr)
	}
	proctest.Eventually(t, "the node up again in its heartbeat", func() bool {
		_, out, _ := cli("nodes")
		return regexp.MustCompile(`steer\s+up`).MatchString(out)
	})
	if code, out, stderr := cli("undrain", "steer"); code != exitOK || !strings.Contains(out, "not draining") {
		t.Errorf("undrain of a node that takes tasks: exit %d\n%s%s", code, out, stderr)
	}
	// It takes tasks again: a new one runs once t-hold is out of the way.
	if code, out, stderr := cli("interrupt", "t-hold"); code != exitOK {
		t.Fatalf("interrupt t-hold: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := cli("submit", "--id", "t-after-undrain", "w", okScript, "--follow"); code != exitOK {
		t.Fatalf("a task after the undrain: exit %d\n%s%s", code, out, stderr)
	}
}

// TestCancel: a running session cancelled ends at once as failed, cancelled by whom and
// why, and is not retried though its host retries; a task waiting in the work queue is
// taken out of it, and never runs.
func TestCancel(t *testing.T) {
	t.Parallel()
	manifest := nodeManifest(t)
	m, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(manifest, []byte(strings.Replace(string(m), "[hosts.w]\n", "[hosts.w]\nretries = 2\n", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	up := runtimeProc(t, "up", "-c", manifest, "--name", "canceller")
	until(t, "agentmux up", up.stderr, "node up")
	running := runtimeProc(t, "submit", "-c", manifest, "--id", "t-doomed", "w", pendingScript, "--follow")
	until(t, "the session's question", running.stderr, "t-doomed.question")
	waiting := runtimeProc(t, "submit", "-c", manifest, "--id", "t-waiting", "w", okScript)
	if code := waiting.wait(t, 30*time.Second); code != exitOK {
		t.Fatalf("submit t-waiting: %d %s", code, waiting.stderr)
	}

	gone := runtimeProc(t, "cancel", "-c", manifest, "t-wait")
	if code := gone.wait(t, 30*time.Second); code != exitOK || !strings.Contains(gone.stdout.String(), "t-waiting: taken out of the work queue of w") {
		t.Fatalf("cancel a waiting task: exit %d\n%s%s", code, gone.stdout, gone.stderr)
	}
	doomed := runtimeProc(t, "cancel", "-c", manifest, "t-doomed", "--reason", "superseded")
	if code := doomed.wait(t, 30*time.Second); code != exitOK || !strings.Contains(doomed.stdout.String(), "t-doomed on canceller: cancelled") {
		t.Fatalf("cancel a running session: exit %d\n%s%s", code, doomed.stdout, doomed.stderr)
	}
	if code := running.wait(t, 30*time.Second); code != exitError || !regexp.MustCompile(`session t-doomed failed: cancelled by \S+: superseded`).MatchString(running.stderr.String()) {
		t.Fatalf("the cancelled session: exit %d\n%s", code, running.stderr)
	}
	if strings.Contains(running.stderr.String(), `"attempt":1`) {
		t.Fatalf("the cancelled session was retried:\n%s", running.stderr)
	}
	proctest.Eventually(t, "the cancel in the audit, and the queue empty", func() bool {
		audit := runtimeProc(t, "audit", "-c", manifest, "t-doomed")
		tasks := runtimeProc(t, "tasks", "-c", manifest)
		audit.wait(t, 10*time.Second)
		tasks.wait(t, 10*time.Second)
		return strings.Contains(audit.stdout.String(), "error on node canceller") && strings.Contains(audit.stdout.String(), "cancelled by") &&
			strings.Contains(tasks.stdout.String(), "the work queue is empty")
	})
	nothing := runtimeProc(t, "cancel", "-c", manifest, "t-never")
	if code := nothing.wait(t, 30*time.Second); code != exitError || !strings.Contains(nothing.stderr.String(), `no running or queued session, and no task in the work queue, is "t-never"`) {
		t.Fatalf("cancel of nothing: exit %d %s", code, nothing.stderr)
	}
}
