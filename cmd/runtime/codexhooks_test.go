package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentmux/agentmux/internal/agenttest"
	"github.com/agentmux/agentmux/internal/proctest"
)

// codexRun is the real Codex, run the way a person runs it, in dir, against the
// scripted Responses API, with the hooks agentmux's installer wrote into its home and
// trusted there (no --dangerously-bypass-hook-trust: Codex runs them because they are
// trusted).
type codexRun struct {
	home, dir string
	api       *agenttest.Responses
}

func newCodexRun(t *testing.T, api *agenttest.Responses) *codexRun {
	return &codexRun{home: t.TempDir(), dir: t.TempDir(), api: api}
}

func (c *codexRun) env() []string {
	return []string{"HOME=" + c.home, "CODEX_HOME=" + c.home, "FAKE_MODEL_KEY=sk-test", "AGENTMUX_API_TOKEN=" + hookToken}
}

// install runs `agentmux hook install codex --trust` into c's home.
func (c *codexRun) install(t *testing.T, url string, args ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"hook", "install", "codex", "--url", url, "--source", "desks", "--trust", "--codex", agenttest.Codex(t)}, args...)...)
	cmd.Env = c.env()
	p := startProc(t, cmd)
	if code := p.wait(t, time.Minute); code != exitOK {
		t.Fatalf("hook install codex: exit %d\n%s%s", code, p.stdout, p.stderr)
	}
	return p.stdout.String()
}

var codexSessionID = regexp.MustCompile(`session id: (\S+)`)

// exec runs `codex exec` (which asks nothing: its approval policy is never) to its end
// and returns its session id.
func (c *codexRun) exec(t *testing.T, prompt string) string {
	t.Helper()
	args := append([]string{"exec", "--skip-git-repo-check", "-s", "workspace-write"}, agenttest.CodexProvider(c.api)...)
	cmd := exec.Command(agenttest.Codex(t), append(args, prompt)...)
	cmd.Dir, cmd.Env = c.dir, c.env()
	p := startProc(t, cmd)
	if code := p.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("codex exec: exit %d\n%s%s", code, p.stdout, p.stderr)
	}
	m := codexSessionID.FindStringSubmatch(p.stderr.String() + p.stdout.String())
	if m == nil {
		t.Fatalf("codex exec printed no session id:\n%s%s", p.stdout, p.stderr)
	}
	return m[1]
}

// TestCodexHooks: Codex run by a person, with agentmux's command hooks installed and
// trusted by `agentmux hook install codex --trust`, asks the fleet. In `codex exec`,
// where only PreToolUse can stop a call, an rm a rule denies never runs and the model
// is told why, and a mkdir it allows runs; in an IDE (Codex's app server), a call Codex
// would ask about goes to the PermissionRequest hook: a person's yes runs it and a
// rule's no refuses it, and the IDE is never asked. With the console gone, the hook
// denies on its own.
func TestCodexHooks(t *testing.T) {
	t.Parallel()
	url, _, con := apiNode(t, apiManifest(t, "deny"))
	api := agenttest.NewResponses(t)
	c := newCodexRun(t, api)
	if out := c.install(t, url, "--events", "pre-tool-use,session-end"); !strings.Contains(out, "trusted 2 agentmux hooks") {
		t.Fatalf("the installer did not trust both hooks: %s", out)
	}
	victim, made := filepath.Join(c.dir, "keep.txt"), filepath.Join(c.dir, "made")
	if err := os.WriteFile(victim, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	api.Replay(
		agenttest.Exec("rm "+victim),
		agenttest.Exec("mkdir "+made),
		agenttest.Call{Text: "Done."},
	)
	session := c.exec(t, "clean up, then make a folder")
	if _, err := os.Stat(victim); err != nil {
		t.Errorf("the rm a rule denies ran: %v", err)
	}
	if st, err := os.Stat(made); err != nil || !st.IsDir() {
		t.Errorf("the mkdir a rule allows did not run: %v", err)
	}
	if told := api.Output(0); !strings.Contains(told, "agentmux denied this") || !strings.Contains(told, "Bash(rm:*)") {
		t.Errorf("the model was told %s; want agentmux's refusal and the rule", told)
	}
	want := []string{`Bash: rm ` + victim + ` → "no" by rule:policy`, `Bash: mkdir ` + made + ` → "yes" by rule:policy`}
	proctest.Within(t, 10*time.Second, func() error {
		if got := answers(t, url, session); strings.Join(got, "\n") != strings.Join(want, "\n") {
			return fmt.Errorf("the audit's answers:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		return nil
	})
	proctest.Within(t, 10*time.Second, func() error { return sessionState(t, url, session, "desks", "ok") })

	// In an IDE, Codex asks before a command that leaves its sandbox: the
	// PermissionRequest hook takes the question to the fleet instead of the IDE.
	ide := newCodexRun(t, api)
	if out := ide.install(t, url, "--events", "permission-request"); !strings.Contains(out, "trusted 1 agentmux hooks") {
		t.Fatalf("the installer did not trust the hook: %s", out)
	}
	touched, kept := filepath.Join(ide.dir, "touched"), filepath.Join(ide.dir, "kept")
	if err := os.WriteFile(kept, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	escalated := func(cmd string) agenttest.Call {
		return agenttest.Call{Name: "exec_command", Args: map[string]any{"cmd": cmd, "yield_time_ms": 30000, "sandbox_permissions": "require_escalated", "justification": "outside the sandbox"}}
	}
	api.Replay(escalated("touch "+touched), escalated("rm "+kept), agenttest.Call{Text: "Done."})
	turn := startCodexIDE(t, ide, "touch it, then clean up")
	answerAsOps(t, url, waitsForPerson(t, url, turn.session).ID, "yes")
	asked := turn.wait(t)
	if len(asked) > 0 {
		t.Errorf("the IDE was asked %v; the hook should have answered", asked)
	}
	if _, err := os.Stat(touched); err != nil {
		t.Errorf("the command a person approved did not run: %v", err)
	}
	if _, err := os.Stat(kept); err != nil {
		t.Errorf("the rm a rule denies ran: %v", err)
	}
	if got := answers(t, url, turn.session); len(got) != 2 || !strings.HasSuffix(got[0], `"yes" by token:ops`) || !strings.HasSuffix(got[1], `"no" by rule:policy`) {
		t.Errorf("the IDE session's answers: %v", got)
	}

	// The console is gone: the command hook denies on its own, and says why.
	_ = con.cmd.Process.Kill()
	<-con.done
	alone := filepath.Join(c.dir, "alone")
	api.Replay(agenttest.Exec("mkdir "+alone), agenttest.Call{Text: "Done."})
	c.exec(t, "make another folder")
	if _, err := os.Stat(alone); err == nil {
		t.Error("a call ran while the console was gone")
	}
	if told := api.Output(0); !strings.Contains(told, "agentmux could not decide") || !strings.Contains(told, "connection refused") {
		t.Errorf("the model was told %s; want the command hook's own fallback", told)
	}
}

// codexIDE is an IDE's conversation with `codex app-server`: one turn, every approval
// request the server puts to the IDE declined and counted.
type codexIDE struct {
	session string
	done    chan []string // the approvals the IDE was asked, at the turn's end
}

func startCodexIDE(t *testing.T, c *codexRun, prompt string) *codexIDE {
	t.Helper()
	cmd := exec.Command(agenttest.Codex(t), append([]string{"app-server"}, agenttest.CodexProvider(c.api)...)...)
	cmd.Dir, cmd.Env = c.dir, append(append(os.Environ(), c.env()...), "AGENTMUX_RUNTIME_MAIN=1") // for the hook, which runs this binary
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	send := func(v map[string]any) {
		b, _ := json.Marshal(v)
		_, _ = in.Write(append(b, '\n'))
	}
	ide := &codexIDE{done: make(chan []string, 1)}
	started := make(chan string, 1)
	go func() {
		var asked []string
		lines := bufio.NewScanner(out)
		lines.Buffer(nil, 16<<20)
		for lines.Scan() {
			var m struct {
				ID     any             `json:"id"`
				Method string          `json:"method"`
				Result json.RawMessage `json:"result"`
			}
			if json.Unmarshal(lines.Bytes(), &m) != nil {
				continue
			}
			switch {
			case m.ID == 1.0 && m.Method == "":
				send(map[string]any{"method": "initialized"})
				send(map[string]any{"id": 2, "method": "thread/start", "params": map[string]any{"cwd": c.dir, "approvalPolicy": "on-request", "sandbox": "workspace-write"}})
			case m.ID == 2.0 && m.Method == "":
				var r struct{ Thread struct{ ID string } }
				_ = json.Unmarshal(m.Result, &r)
				started <- r.Thread.ID
				send(map[string]any{"id": 3, "method": "turn/start", "params": map[string]any{"threadId": r.Thread.ID, "input": []any{map[string]any{"type": "text", "text": prompt}}}})
			case strings.HasSuffix(m.Method, "requestApproval"):
				asked = append(asked, m.Method)
				send(map[string]any{"id": m.ID, "result": map[string]any{"decision": "decline"}})
			case m.Method == "turn/completed":
				ide.done <- asked
				return
			}
		}
	}()
	send(map[string]any{"id": 1, "method": "initialize", "params": map[string]any{"clientInfo": map[string]any{"name": "an-ide", "version": "1"}}})
	select {
	case ide.session = <-started:
	case <-time.After(time.Minute):
		t.Fatal("codex app-server started no thread")
	}
	return ide
}

// wait waits for the turn's end and returns the approvals the IDE was asked.
func (ide *codexIDE) wait(t *testing.T) []string {
	t.Helper()
	select {
	case asked := <-ide.done:
		return asked
	case <-time.After(3 * time.Minute):
		t.Fatal("the IDE's turn did not end")
		return nil
	}
}
