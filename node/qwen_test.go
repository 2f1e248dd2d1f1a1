package node

import (
	"encoding/json"
	"fmt"
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
	f := agenttest.NewChatCompletions(t)
	n := start(t, qwenHost(t, f, dir, ""))
	approvedThenDenied(t, n, "qwen", f, "run_shell_command", dir)
	endsTurnAtRefusal(t, f, "Qwen Code 0.24.4")

	// Qwen Code's ask_user_question reaches agentmux as a question of each.
	f.Replay(
		agenttest.Call{Name: "ask_user_question", Args: map[string]any{"questions": []any{map[string]any{
			"question": "Which signing algorithm should the tokens use?", "header": "Auth",
			"options": []any{map[string]any{"label": "RS256", "description": "asymmetric"}, map[string]any{"label": "HS256", "description": "shared secret"}}}}}},
		agenttest.Call{Text: "Using RS256."},
	)
	res := n.run("qwen", "set up auth")
	if !res.OK || len(res.Requests) != 1 || res.Requests[0].Type != "question" || string(res.Requests[0].Value) != `"RS256"` {
		t.Fatalf("the question: %+v", res)
	}
	if told := f.Output(0); !strings.Contains(told, "RS256") {
		t.Fatalf("the model was told %s; want the answer", told)
	}
}

func TestQwenCancelledByInterrupt(t *testing.T) {
	dir := t.TempDir()
	f := agenttest.NewChatCompletions(t)
	interruptedByItself(t, start(t, qwenHost(t, f, dir, `question_timeout = "1m"`)), "qwen", f, "run_shell_command", dir)
}

func TestQwen10ConcurrentSessions(t *testing.T) {
	f := agenttest.NewChatCompletions(t)
	tenAtOnce(t, start(t, qwenHost(t, f, t.TempDir(), "pool = 10")), "qwen", f, "run_shell_command")
}
