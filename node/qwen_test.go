package node

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/internal/agenttest"
)

// qwenHost runs the real Qwen Code in ACP mode against the scripted Chat Completions
// API (its OpenAI-compatible provider), with agentSupervisors.
func qwenHost(t *testing.T, f *agenttest.ChatCompletions, dir, extra string) string {
	args, _ := json.Marshal([]string{"--acp", "--auth-type", "openai", "--openai-base-url", f.URL(), "--openai-api-key", "sk-test", "-m", "fake-model"})
	return fmt.Sprintf(`[hosts.qwen]
command = %q
args = %s
dialect = "acp"
working_dir = %q
stop_grace = "2s"
env = { HOME = %q, AGENTMUX_TEST_MARK = "@MARK@" }
%s
`, agenttest.NPMAgent(t, "@qwen-code/qwen-code", agenttest.QwenVersion, "qwen"), args, dir, t.TempDir(), extra) + agentSupervisors
}

func TestQwenApprovedDeniedAndAsked(t *testing.T) {
	dir := t.TempDir()
	target, victim := filepath.Join(dir, "hello.txt"), filepath.Join(dir, "keep.txt")
	if err := os.WriteFile(victim, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := agenttest.NewChatCompletions(t,
		agenttest.Call{Name: "run_shell_command", Args: map[string]any{"command": "echo hi > " + target, "description": "write a greeting"}},
		agenttest.Call{Name: "run_shell_command", Args: map[string]any{"command": "echo again >> " + target, "description": "write more"}},
		agenttest.Call{Text: "Written."},
	)
	n := start(t, qwenHost(t, f, dir, ""))
	res := n.run("qwen", "write hi")
	if !res.OK {
		t.Fatalf("result %+v %s", res, res.Payload)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "hi\nagain\n" {
		t.Fatalf("the approved commands did not run: %q %v", b, err)
	}
	if len(res.Requests) != 2 || res.Requests[0].Decider != "rule:ops" || res.Requests[1].Decider != "rule:ops" {
		t.Fatalf("requests %+v; want each command asked", res.Requests)
	}

	f.Replay(
		agenttest.Call{Name: "run_shell_command", Args: map[string]any{"command": "rm " + victim, "description": "clean up"}},
		agenttest.Call{Text: "Left it alone."},
	)
	res = n.run("qwen", "clean up")
	if !res.OK {
		t.Fatalf("second session %+v", res)
	}
	if _, err := os.Stat(victim); err != nil {
		t.Fatalf("the denied command ran: %v", err)
	}
	// Qwen Code ends its turn at a refused call (its "stop after a cancelled
	// permission"), without a further model call.
	if told := f.Output(0); told != "" {
		t.Fatalf("the model was told %s; Qwen Code 0.24.4 ends the turn at a refusal", told)
	}
	if len(res.Requests) != 1 || string(res.Requests[0].Value) != `"no"` {
		t.Fatalf("requests %+v", res.Requests)
	}

	// Qwen Code's ask_user_question reaches agentmux as a question of each.
	f.Replay(
		agenttest.Call{Name: "ask_user_question", Args: map[string]any{"questions": []any{map[string]any{
			"question": "Which signing algorithm should the tokens use?", "header": "Auth",
			"options": []any{map[string]any{"label": "RS256", "description": "asymmetric"}, map[string]any{"label": "HS256", "description": "shared secret"}}}}}},
		agenttest.Call{Text: "Using RS256."},
	)
	res = n.run("qwen", "set up auth")
	if !res.OK || len(res.Requests) != 1 || res.Requests[0].Type != "question" || string(res.Requests[0].Value) != `"RS256"` {
		t.Fatalf("the question: %+v", res)
	}
	if told := f.Output(0); !strings.Contains(told, "RS256") {
		t.Fatalf("the model was told %s; want the answer", told)
	}
}

func TestQwenCancelledByInterrupt(t *testing.T) {
	dir := t.TempDir()
	f := agenttest.NewChatCompletions(t,
		agenttest.Call{Name: "run_shell_command", Args: map[string]any{"command": "echo x > prod.txt", "description": "touch prod"}},
		agenttest.Call{Text: "never reached"},
	)
	n := start(t, qwenHost(t, f, dir, `question_timeout = "1m"`))
	if why := interruptAtApproval(t, n, "qwen"); why != "acp turn ended: cancelled" {
		t.Errorf("the session ended with %q; want Qwen Code's own end of the turn", why)
	}
	if _, err := os.Stat(filepath.Join(dir, "prod.txt")); err == nil {
		t.Fatal("the interrupted command ran")
	}
}

func TestQwen10ConcurrentSessions(t *testing.T) {
	dir := t.TempDir()
	f := agenttest.NewChatCompletions(t,
		agenttest.Call{Name: "run_shell_command", Args: map[string]any{"command": "echo hi > concurrent.txt", "description": "write"}},
		agenttest.Call{Text: "Done."},
	)
	n := start(t, qwenHost(t, f, dir, "pool = 10"))
	concurrently(t, n, "qwen", 10)
}
