package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/hook"
	"github.com/agentmux/agentmux/internal/agenttest"
	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/wire"
)

// The API's tokens, one per role (128 bits each).
const (
	hookToken     = "a1b2c3d4e5f60718293a4b5c6d7e8f90"
	operatorToken = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
	viewerToken   = "99887766554433221100ffeeddccbbaa"
)

// apiManifest is a node with a host of scripted agents (w) and attached sources of
// Claude Codes (laptops) and of Codexes (desks): a policy allows mkdir and refuses rm,
// and a person decides touch; three API tokens, one per role.
func apiManifest(t *testing.T, unreachable string) string {
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
stop_grace = "2s"
[attached.laptops]
dialect = "claude-code"
question_timeout = "2m"
unreachable = %[4]q
[attached.desks]
dialect = "codex"
question_timeout = "2m"
unreachable = %[4]q
[supervisors.policy]
strategy = "rule"
allow = ["Bash(mkdir:*)"]
deny = ["Bash(rm:*)"]
[supervisors.people]
strategy = "human"
[[routes]]
match = "^Bash: touch|(?i)a person"
supervisor = "people"
[[routes]]
supervisor = "policy"
[[api.tokens]]
name = "alice"
token_env = "TEST_HOOK_TOKEN"
role = "hook"
[[api.tokens]]
name = "ops"
token_env = "TEST_OPERATOR_TOKEN"
role = "operator"
[[api.tokens]]
name = "watcher"
token_env = "TEST_VIEWER_TOKEN"
role = "viewer"
`, proctest.FreePort(t), filepath.Join(dir, "store"), os.Args[0], unreachable)
	path := filepath.Join(dir, "agentmux.toml")
	if err := os.WriteFile(path, []byte(m), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// apiNode runs `agentmux up` and `agentmux console` on the manifest, and returns the
// console's address and both processes.
func apiNode(t *testing.T, manifest string, upArgs ...string) (url string, up, con *proc) {
	t.Helper()
	up = runtimeProc(t, append([]string{"up", "-c", manifest}, upArgs...)...)
	until(t, "agentmux up", up.stderr, "node up")
	port := proctest.FreePort(t)
	cmd := exec.Command(os.Args[0], "console", "-c", manifest, "--addr", fmt.Sprintf("127.0.0.1:%d", port))
	cmd.Env = []string{"TEST_HOOK_TOKEN=" + hookToken, "TEST_OPERATOR_TOKEN=" + operatorToken, "TEST_VIEWER_TOKEN=" + viewerToken}
	con = startProc(t, cmd)
	until(t, "agentmux console", con.stderr, "console up")
	return fmt.Sprintf("http://127.0.0.1:%d", port), up, con
}

// call makes one API call with token and returns the status and body, unchecked.
func call(t *testing.T, method, url, token string, body any) (int, []byte) {
	t.Helper()
	return (&apiClient{t: t}).send(method, url, token, body, false)
}

// claudeRun is the real Claude Code, run the way a person runs it (claude -p), in dir,
// against the scripted model API, with the settings file agentmux's installer wrote.
type claudeRun struct {
	home, dir string
	api       *agenttest.Anthropic
}

func newClaudeRun(t *testing.T, api *agenttest.Anthropic) *claudeRun {
	return &claudeRun{home: t.TempDir(), dir: t.TempDir(), api: api}
}

func (c *claudeRun) settings() string { return filepath.Join(c.home, ".claude", "settings.json") }

func (c *claudeRun) start(t *testing.T, prompt string) *proc {
	t.Helper()
	cmd := exec.Command(agenttest.Claude(t), "-p", prompt, "--output-format", "json")
	cmd.Dir = c.dir
	cmd.Env = []string{"HOME=" + c.home, "CLAUDE_CONFIG_DIR=" + filepath.Join(c.home, ".claude"), "ANTHROPIC_BASE_URL=" + c.api.URL(),
		"ANTHROPIC_API_KEY=sk-test", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1",
		"AGENTMUX_API_TOKEN=" + hookToken}
	return startProc(t, cmd)
}

// run runs Claude Code to its end and returns its session id.
func (c *claudeRun) run(t *testing.T, prompt string) string {
	t.Helper()
	p := c.start(t, prompt)
	return c.result(t, p)
}

func (c *claudeRun) result(t *testing.T, p *proc) string {
	t.Helper()
	if code := p.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("claude -p: exit %d\nstdout:\n%s\nstderr:\n%s", code, p.stdout, p.stderr)
	}
	var out struct {
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal([]byte(p.stdout.String()), &out); err != nil || out.SessionID == "" {
		t.Fatalf("claude -p printed no session id: %v\n%s", err, p.stdout)
	}
	return out.SessionID
}

// install runs `agentmux hook install claude-code` into c's settings.
func (c *claudeRun) install(t *testing.T, url string, args ...string) {
	t.Helper()
	p := runtimeProc(t, append([]string{"hook", "install", "claude-code", "--settings", c.settings(), "--url", url, "--source", "laptops"}, args...)...)
	if code := p.wait(t, 20*time.Second); code != exitOK {
		t.Fatalf("hook install: exit %d\n%s", code, p.stderr)
	}
}

// answers are a session's answers in its audit as the API gives it: "text → value by decider".
func answers(t *testing.T, url, session string) []string {
	t.Helper()
	status, body := call(t, "GET", url+"/v1/sessions/"+session+"/audit", viewerToken, nil)
	if status != http.StatusOK {
		t.Fatalf("the session's audit: %d %s", status, body)
	}
	var records []*wire.AuditRecord
	if err := json.Unmarshal(body, &records); err != nil {
		t.Fatal(err)
	}
	// A request answered soon has one record, its answer, with its text; one answered
	// later (by a person) has a request record with the text, then its answer.
	texts := map[string]string{}
	var out []string
	for _, r := range records {
		switch {
		case r.Kind == "request":
			texts[fmt.Sprint(r.Attempt, r.Request)] = r.Text
		case r.Kind == "answer":
			text := r.Text
			if text == "" {
				text = texts[fmt.Sprint(r.Attempt, r.Request)]
			}
			out = append(out, text+" → "+string(r.Value)+" by "+r.Decider)
		}
	}
	return out
}

// TestClaudeCodeHooks: Claude Code run by a person, with agentmux's http hook in its
// settings, asks the fleet: a Bash call a rule denies never runs and the model is told
// why; an allowed one runs; one a person answers after 20 s runs; every answer is in
// the session's audit, and the session ends with Claude Code's.
func TestClaudeCodeHooks(t *testing.T) {
	t.Parallel()
	url, _, _ := apiNode(t, apiManifest(t, "deny"))
	api := agenttest.NewAnthropic(t)
	c := newClaudeRun(t, api)
	c.install(t, url, "--events", "pre-tool-use,session-end")

	victim, made := filepath.Join(c.dir, "keep.txt"), filepath.Join(c.dir, "made")
	if err := os.WriteFile(victim, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	api.Replay(
		[]agenttest.Block{{Tool: "Bash", Input: map[string]any{"command": "rm " + victim, "description": "clean up"}}},
		[]agenttest.Block{{Tool: "Bash", Input: map[string]any{"command": "mkdir " + made, "description": "make a folder"}}},
		[]agenttest.Block{{Text: "Done."}},
	)
	session := c.run(t, "clean up, then make a folder")
	if _, err := os.Stat(victim); err != nil {
		t.Errorf("the rm a rule denies ran: %v", err)
	}
	if st, err := os.Stat(made); err != nil || !st.IsDir() {
		t.Errorf("the mkdir a rule allows did not run: %v", err)
	}
	if told, isErr := api.ToolResult(0); !isErr || !strings.Contains(told, "Bash(rm:*)") {
		t.Errorf("the model was told %s (error %v); want the rule that denied it", told, isErr)
	}
	want := []string{`Bash: rm ` + victim + ` (clean up) → "no" by rule:policy`, `Bash: mkdir ` + made + ` (make a folder) → "yes" by rule:policy`}
	proctest.Within(t, 10*time.Second, func() error {
		if got := answers(t, url, session); strings.Join(got, "\n") != strings.Join(want, "\n") {
			return fmt.Errorf("the audit's answers:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		return nil
	})
	proctest.Within(t, 10*time.Second, func() error { return sessionState(t, url, session, "laptops", "ok") })

	// A person answers from the API after 20 s: the hook waits for them, and the call runs.
	touched := filepath.Join(c.dir, "touched")
	api.Replay(
		[]agenttest.Block{{Tool: "Bash", Input: map[string]any{"command": "touch " + touched}}},
		[]agenttest.Block{{Text: "Touched."}},
	)
	p := c.start(t, "touch it")
	pending := waitsForPerson(t, url, "")
	<-time.After(20 * time.Second) // a person takes their time; the hook is still waiting
	answerAsOps(t, url, pending.ID, "yes")
	second := c.result(t, p)
	if _, err := os.Stat(touched); err != nil {
		t.Errorf("the call a person approved after 20 s did not run: %v", err)
	}
	if got := answers(t, url, second); len(got) != 1 || !strings.HasSuffix(got[0], `"yes" by token:ops`) {
		t.Errorf("the person's answer in the audit: %v; want it by token:ops (an operator token's)", got)
	}
}

// waitsForPerson waits for a request of session (any, when "") to wait for a person in
// the console, and returns it.
func waitsForPerson(t *testing.T, url, session string) wire.PendingRequest {
	t.Helper()
	var pending wire.PendingRequest
	proctest.Within(t, time.Minute, func() error {
		status, body := call(t, "GET", url+"/v1/pending", operatorToken, nil)
		var list struct{ Pending []wire.PendingRequest }
		if err := json.Unmarshal(body, &list); status != http.StatusOK || err != nil {
			return fmt.Errorf("pending: %d %s", status, body)
		}
		for _, r := range list.Pending {
			if session == "" || r.Session == session {
				pending = r
				return nil
			}
		}
		return fmt.Errorf("no request of session %q waits for a person yet: %s", session, body)
	})
	return pending
}

// answerAsOps answers a request waiting for a person with an operator's token.
func answerAsOps(t *testing.T, url, id string, value any) {
	t.Helper()
	if status, body := call(t, "POST", url+"/v1/pending/"+id+"/answer", operatorToken, map[string]any{"value": value}); status != http.StatusOK || !strings.Contains(string(body), `"ok":true`) {
		t.Fatalf("the operator's answer: %d %s", status, body)
	}
}

// sessionState checks that the console lists session of host in state.
func sessionState(t *testing.T, url, session, host, state string) error {
	status, body := call(t, "GET", url+"/v1/sessions", viewerToken, nil)
	var list struct {
		Sessions []struct{ ID, Host, State string }
	}
	if err := json.Unmarshal(body, &list); status != http.StatusOK || err != nil {
		return fmt.Errorf("sessions: %d %s", status, body)
	}
	for _, s := range list.Sessions {
		if s.ID == session {
			if s.State != state || s.Host != host {
				return fmt.Errorf("session %s is %s on %s; want %s on %s", session, s.State, s.Host, state, host)
			}
			return nil
		}
	}
	return fmt.Errorf("the console does not list session %s: %s", session, body)
}

// TestClaudeCodeCommandHookFallsBack: the command hook (`agentmux hook claude-code`)
// decides as the http hook does; when no node runs the source, the console answers the
// source's fallback, deny, saying so; when the console itself is gone, the command hook
// denies on its own, saying so. Nothing runs unapproved.
func TestClaudeCodeCommandHookFallsBack(t *testing.T) {
	t.Parallel()
	manifest := apiManifest(t, "deny")
	url, up, con := apiNode(t, manifest)
	api := agenttest.NewAnthropic(t)
	c := newClaudeRun(t, api)
	c.install(t, url, "--command", "--events", "pre-tool-use,permission-request")

	made := filepath.Join(c.dir, "made")
	script := func(dir string) {
		api.Replay(
			[]agenttest.Block{{Tool: "Bash", Input: map[string]any{"command": "mkdir " + dir}}},
			[]agenttest.Block{{Text: "Done."}},
		)
	}
	script(made)
	session := c.run(t, "make a folder")
	if _, err := os.Stat(made); err != nil {
		t.Fatalf("the mkdir a rule allows did not run through the command hook: %v", err)
	}
	if got := answers(t, url, session); len(got) != 1 || !strings.HasSuffix(got[0], `"yes" by rule:policy`) {
		t.Errorf("the audit's answers: %v", got)
	}

	// No node runs the source: the console answers deny, and says why.
	_ = up.cmd.Process.Kill()
	<-up.done
	url, _, con = apiNode(t, manifest, "--hosts", "w")
	c.install(t, url, "--command", "--events", "pre-tool-use,permission-request")
	orphan := filepath.Join(c.dir, "orphan")
	script(orphan)
	c.run(t, "make another folder")
	if _, err := os.Stat(orphan); err == nil {
		t.Error("a call ran that no node decided")
	}
	if told, isErr := api.ToolResult(0); !isErr || !strings.Contains(told, "no node runs source laptops now") {
		t.Errorf("the model was told %s (error %v); want the fallback's reason", told, isErr)
	}

	// The console is gone: the command hook denies on its own.
	_ = con.cmd.Process.Kill()
	<-con.done
	alone := filepath.Join(c.dir, "alone")
	script(alone)
	c.run(t, "make a third folder")
	if _, err := os.Stat(alone); err == nil {
		t.Error("a call ran while the console was gone")
	}
	if told, isErr := api.ToolResult(0); !isErr || !strings.Contains(told, "agentmux could not decide") || !strings.Contains(told, "connection refused") {
		t.Errorf("the model was told %s (error %v); want the command hook's own fallback, saying the console could not be reached", told, isErr)
	}
}

// TestFleetAttachedSessionStaysOnOneNode: two nodes run the same source on a
// three-server cluster; every request of a session, whichever node the queue group
// hands it to, is answered in the one session on the node that holds it. Killed with
// SIGKILL, that node's sessions are taken over by the other at their next request, but
// only by the user whose session it was.
func TestFleetAttachedSessionStaysOnOneNode(t *testing.T) {
	t.Parallel()
	f := startFleet(t, `
[attached.laptops]
dialect = "claude-code"
[supervisors.policy]
strategy = "rule"
allow = ["Bash(mkdir:*)"]
[[routes]]
supervisor = "policy"
`)
	nodes := map[string]*proc{"a": f.node(t, "a"), "b": f.node(t, "b")}
	nc, _ := f.conn(t)
	send := func(i int, user string) *wire.AttachReply {
		t.Helper()
		in, _ := json.Marshal(map[string]any{"session_id": "s-fleet", "hook_event_name": "PreToolUse", "tool_name": "Bash",
			"tool_input": map[string]any{"command": fmt.Sprintf("mkdir d%d", i)}, "tool_use_id": fmt.Sprintf("toolu_%d", i)})
		req, err := hook.Request(config.AttachedClaudeCode, in, user)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal(req)
		m, err := nc.Request(wire.AttachSubject("laptops"), data, time.Minute)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		var r wire.AttachReply
		if err := json.Unmarshal(m.Data, &r); err != nil {
			t.Fatalf("request %d: %s (%v)", i, m.Data, err)
		}
		return &r
	}
	ask := func(i int) *wire.AttachReply {
		t.Helper()
		r := send(i, "alice")
		if hook.VerdictOf(r).Decision != hook.Allow {
			t.Fatalf("request %d: %+v; want it allowed", i, r)
		}
		return r
	}
	first := ask(0)
	for i := 1; i < 12; i++ {
		if r := ask(i); r.Node != first.Node || r.Attempt != 0 {
			t.Fatalf("request %d was answered by %s in attempt %d; want every one by %s in attempt 0", i, r.Node, r.Attempt, first.Node)
		}
	}
	kill(t, nodes[first.Node])
	f.forgotten(t, first.Node)
	// The node that takes the session over knows whose it is from the audit: another
	// user's request cannot take alice's session.
	if r := send(12, "mallory"); r.Code != wire.AttachForbidden || !strings.Contains(r.Error, "alice") {
		t.Errorf("mallory's request after %s was killed: %+v; want it refused as alice's session", first.Node, r)
	}
	after := ask(13)
	if after.Node == first.Node || after.Attempt != 1 {
		t.Errorf("after %s was killed: answered by %s in attempt %d; want the other node, attempt 1", first.Node, after.Node, after.Attempt)
	}
}

// TestHookInstallKeepsTheFileWhereItIs: a settings file that is a symbolic link (a
// dotfiles manager's) stays one, and the file it names gets the hooks, its mode kept;
// a command hook carries --unreachable ask when asked to.
func TestHookInstallKeepsTheFileWhereItIs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	real := filepath.Join(dir, "dotfiles", "settings.json")
	if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(real, []byte(`{"model": "sonnet"}`), 0o640); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, ".claude", "settings.json")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	p := runtimeProc(t, "hook", "install", "claude-code", "--settings", link, "--command", "--unreachable", "ask", "--source", "laptops")
	if code := p.wait(t, 20*time.Second); code != exitOK {
		t.Fatalf("hook install: exit %d\n%s", code, p.stderr)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the settings link was replaced by a file: %v", err)
	}
	b, err := os.ReadFile(real)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"model": "sonnet"`) || !strings.Contains(string(b), "hook claude-code --url http://127.0.0.1:9470 --source laptops --unreachable ask") {
		t.Errorf("the file the link names:\n%s", b)
	}
	if st, _ := os.Stat(real); st.Mode().Perm() != 0o640 {
		t.Errorf("its mode is %v; want 0640 kept", st.Mode().Perm())
	}
}
