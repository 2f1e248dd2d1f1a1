package node

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentmux/agentmux/internal/agenttest"
)

// geminiHost runs the real Gemini CLI in ACP mode against the scripted Gemini API
// (its "gateway" auth: GOOGLE_GEMINI_BASE_URL), with agentSupervisors.
func geminiHost(t *testing.T, f *agenttest.GeminiAPI, dir, extra string) string {
	return fmt.Sprintf(`[hosts.gemini]
command = %q
args = ["--acp"]
dialect = "acp"
working_dir = %q
stop_grace = "2s"
env = { HOME = %q, GOOGLE_GEMINI_BASE_URL = %q, GEMINI_API_KEY = "test-key", GEMINI_CLI_NO_RELAUNCH = "true", AGENTMUX_TEST_MARK = "@MARK@" }
%s
`, agenttest.Gemini(t), dir, t.TempDir(), f.URL(), extra) + agentSupervisors
}

func TestGeminiApprovedDeniedAndTwoSessionsOnOneProcess(t *testing.T) {
	dir := t.TempDir()
	target, victim := filepath.Join(dir, "hello.txt"), filepath.Join(dir, "keep.txt")
	if err := os.WriteFile(victim, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Two commands of one kind: "yes" to the first is Gemini CLI's "Allow" (once), not
	// its "Allow for this session", so the second is asked too.
	f := agenttest.NewGeminiAPI(t,
		agenttest.Call{Name: "run_shell_command", Args: map[string]any{"command": "echo hi > " + target, "description": "write a greeting"}},
		agenttest.Call{Name: "run_shell_command", Args: map[string]any{"command": "echo again >> " + target, "description": "write more"}},
		agenttest.Call{Text: "Written."},
	)
	n := start(t, geminiHost(t, f, dir, ""))
	res := n.run("gemini", "write hi")
	if !res.OK || !strings.Contains(string(res.Payload), `"stopReason":"end_turn"`) && !strings.Contains(string(res.Payload), `"stop_reason":"end_turn"`) {
		t.Fatalf("result %+v %s", res, res.Payload)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "hi\nagain\n" {
		t.Fatalf("the approved commands did not run: %q %v", b, err)
	}
	if len(res.Requests) != 2 || res.Requests[0].Type != "approval" || res.Requests[0].Decider != "rule:ops" || res.Requests[1].Decider != "rule:ops" {
		t.Fatalf("requests %+v; want each command asked", res.Requests)
	}

	f.Replay(
		agenttest.Call{Name: "run_shell_command", Args: map[string]any{"command": "rm " + victim, "description": "clean up"}},
		agenttest.Call{Text: "Left it alone."},
	)
	res = n.run("gemini", "clean up")
	if !res.OK {
		t.Fatalf("second session %+v", res)
	}
	if _, err := os.Stat(victim); err != nil {
		t.Fatalf("the denied command ran: %v", err)
	}
	if told := f.Output(0); !strings.Contains(strings.ToLower(told), "cancel") && !strings.Contains(strings.ToLower(told), "denied") && !strings.Contains(strings.ToLower(told), "reject") {
		t.Fatalf("the model was not told the command was refused: %s (requests %+v)", told, res.Requests)
	}
	if v := testutil.ToFloat64(n.n.Metrics.AgentStarts.WithLabelValues("gemini")); v != 1 {
		t.Fatalf("processes started = %v; one ACP process carries both sessions", v)
	}
}

func TestGeminiCancelledByInterrupt(t *testing.T) {
	dir := t.TempDir()
	f := agenttest.NewGeminiAPI(t,
		agenttest.Call{Name: "run_shell_command", Args: map[string]any{"command": "echo x > prod.txt", "description": "touch prod"}},
		agenttest.Call{Text: "never reached"},
	)
	n := start(t, geminiHost(t, f, dir, `question_timeout = "1m"`))
	// Gemini CLI ends the turn itself once its open permission request is answered
	// cancelled, as ACP asks of a client that cancels, rather than being stopped.
	if why := interruptAtApproval(t, n, "gemini"); why != "acp turn ended: cancelled" {
		t.Errorf("the session ended with %q; want Gemini CLI's own end of the turn", why)
	}
	if _, err := os.Stat(filepath.Join(dir, "prod.txt")); err == nil {
		t.Fatal("the interrupted command ran")
	}
}

func TestGemini10ConcurrentSessions(t *testing.T) {
	dir := t.TempDir()
	f := agenttest.NewGeminiAPI(t,
		agenttest.Call{Name: "run_shell_command", Args: map[string]any{"command": "echo hi > concurrent.txt", "description": "write"}},
		agenttest.Call{Text: "Done."},
	)
	n := start(t, geminiHost(t, f, dir, "pool = 10"))
	concurrently(t, n, "gemini", 10)
}
