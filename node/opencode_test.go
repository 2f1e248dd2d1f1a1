package node

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentmux/agentmux/internal/agenttest"
)

// opencodeHost runs the real OpenCode as an ACP agent (`opencode acp`) against the
// scripted Chat Completions API, an OpenAI-compatible provider in its config, which asks
// before every shell command and edit; with agentSupervisors.
func opencodeHost(t *testing.T, f *agenttest.ChatCompletions, dir, extra string) string {
	config, _ := json.Marshal(map[string]any{
		"provider": map[string]any{"fake": map[string]any{"npm": "@ai-sdk/openai-compatible", "name": "Fake",
			"options": map[string]any{"baseURL": f.URL(), "apiKey": "sk-test"}, "models": map[string]any{"fake-model": map[string]any{"name": "Fake"}}}},
		"model":       "fake/fake-model",
		"small_model": "fake/fake-model",
		"permission":  map[string]any{"bash": "ask", "edit": "ask"},
		"autoupdate":  false,
		"share":       "disabled",
	})
	return fmt.Sprintf(`[hosts.opencode]
command = %q
args = ["acp"]
dialect = "acp"
working_dir = %q
stop_grace = "2s"
env = { HOME = %q, OPENCODE_CONFIG_CONTENT = %q, OPENCODE_DISABLE_MODELS_FETCH = "1", OPENCODE_DISABLE_AUTOUPDATE = "1", OPENCODE_DISABLE_LSP_DOWNLOAD = "1", OPENCODE_DISABLE_DEFAULT_PLUGINS = "1", AGENTMUX_TEST_MARK = "@MARK@" }
%s
`, agenttest.NPMAgent(t, "opencode-ai", agenttest.OpenCodeVersion, "opencode"), dir, t.TempDir(), string(config), extra) + agentSupervisors
}

func TestOpenCodeApprovedAndDenied(t *testing.T) {
	dir := t.TempDir()
	target, victim := filepath.Join(dir, "hello.txt"), filepath.Join(dir, "keep.txt")
	if err := os.WriteFile(victim, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := agenttest.NewChatCompletions(t,
		agenttest.Call{Name: "bash", Args: map[string]any{"command": "echo hi > " + target, "description": "write a greeting"}},
		agenttest.Call{Name: "bash", Args: map[string]any{"command": "echo again >> " + target, "description": "write more"}},
		agenttest.Call{Text: "Written."},
	)
	n := start(t, opencodeHost(t, f, dir, ""))
	res := n.run("opencode", "write hi")
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
		agenttest.Call{Name: "bash", Args: map[string]any{"command": "rm " + victim, "description": "clean up"}},
		agenttest.Call{Text: "Left it alone."},
	)
	res = n.run("opencode", "clean up")
	if !res.OK {
		t.Fatalf("second session %+v", res)
	}
	if _, err := os.Stat(victim); err != nil {
		t.Fatalf("the denied command ran: %v", err)
	}
	if len(res.Requests) != 1 || string(res.Requests[0].Value) != `"no"` {
		t.Fatalf("requests %+v", res.Requests)
	}
	// OpenCode ends its turn at a refused call: the model is not called again.
	if told := f.Output(0); told != "" {
		t.Fatalf("the model was told %s; OpenCode 1.18.33 ends the turn at a refusal", told)
	}

}

func TestOpenCodeCancelledByInterrupt(t *testing.T) {
	dir := t.TempDir()
	f := agenttest.NewChatCompletions(t,
		agenttest.Call{Name: "bash", Args: map[string]any{"command": "echo x > prod.txt", "description": "touch prod"}},
		agenttest.Call{Text: "never reached"},
	)
	n := start(t, opencodeHost(t, f, dir, `question_timeout = "1m"`))
	if why := interruptAtApproval(t, n, "opencode"); why != "acp turn ended: cancelled" {
		t.Errorf("the session ended with %q; want OpenCode's own end of the turn", why)
	}
	if _, err := os.Stat(filepath.Join(dir, "prod.txt")); err == nil {
		t.Fatal("the interrupted command ran")
	}
}

func TestOpenCode10ConcurrentSessions(t *testing.T) {
	dir := t.TempDir()
	f := agenttest.NewChatCompletions(t,
		agenttest.Call{Name: "bash", Args: map[string]any{"command": "echo hi > concurrent.txt", "description": "write"}},
		agenttest.Call{Text: "Done."},
	)
	n := start(t, opencodeHost(t, f, dir, "pool = 10"))
	if res := n.run("opencode", "first"); !res.OK {
		t.Fatalf("first session %+v", res)
	}
	concurrently(t, n, "opencode", 10)
}
