package node

import (
	"encoding/json"
	"fmt"
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
	f := agenttest.NewChatCompletions(t)
	approvedThenDenied(t, start(t, opencodeHost(t, f, dir, "")), "opencode", f, "bash", dir)
	endsTurnAtRefusal(t, f, "OpenCode 1.18.33")
}

func TestOpenCodeCancelledByInterrupt(t *testing.T) {
	dir := t.TempDir()
	f := agenttest.NewChatCompletions(t)
	interruptedByItself(t, start(t, opencodeHost(t, f, dir, `question_timeout = "1m"`)), "opencode", f, "bash", dir)
}

// OpenCode's SQLite database is locked while ten processes make it at once: the first
// session makes it, then ten run at once (docs/dialects.md).
func TestOpenCode10ConcurrentSessions(t *testing.T) {
	f := agenttest.NewChatCompletions(t, agenttest.Call{Text: "Ready."})
	n := start(t, opencodeHost(t, f, t.TempDir(), "pool = 10"))
	if res := n.run("opencode", "first"); !res.OK {
		t.Fatalf("first session %+v", res)
	}
	tenAtOnce(t, n, "opencode", f, "bash")
}
