package hook

import (
	"encoding/json"
	"strings"
	"testing"
)

// Installing writes agentmux's hooks and leaves the rest of the file as it was: other
// keys in their order, other hooks of the same event; installing again replaces
// agentmux's hooks rather than adding a second set.
func TestInstallClaudeKeepsTheRest(t *testing.T) {
	settings := `{
  "permissions": {"allow": ["Bash(npm test:*)"]},
  "model": "sonnet",
  "hooks": {
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./lint.sh"}]}],
    "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]
  }
}`
	h := ClaudeHook{URL: "http://127.0.0.1:9470/v1/hooks/claude-code?source=laptops", TokenEnv: "AGENTMUX_API_TOKEN", Timeout: 3600}
	once, err := InstallClaude([]byte(settings), []string{PreToolUse, PermissionRequest, SessionEnd}, h)
	if err != nil {
		t.Fatal(err)
	}
	twice, err := InstallClaude(once, []string{PreToolUse, PermissionRequest, SessionEnd}, h)
	if err != nil {
		t.Fatal(err)
	}
	if string(once) != string(twice) {
		t.Errorf("installing again changed the file:\n%s\nthen:\n%s", once, twice)
	}
	out := string(once)
	if i, j, k := strings.Index(out, `"permissions"`), strings.Index(out, `"model"`), strings.Index(out, `"hooks"`); !(i < j && j < k) {
		t.Errorf("the keys moved:\n%s", out)
	}
	var got struct {
		Permissions map[string][]string `json:"permissions"`
		Hooks       map[string][]struct {
			Matcher string           `json:"matcher"`
			Hooks   []map[string]any `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(once, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Permissions["allow"]) != 1 || len(got.Hooks["Stop"]) != 1 {
		t.Errorf("other settings lost:\n%s", out)
	}
	pre := got.Hooks[PreToolUse]
	if len(pre) != 2 || pre[0].Hooks[0]["command"] != "./lint.sh" || pre[1].Matcher != "*" || pre[1].Hooks[0]["url"] != h.URL {
		t.Errorf("PreToolUse: %+v; want the lint hook kept and agentmux's after it", pre)
	}
	end := got.Hooks[SessionEnd]
	if len(end) != 1 || end[0].Hooks[0]["type"] != "http" || end[0].Hooks[0]["timeout"] != float64(3600) {
		t.Errorf("SessionEnd: %+v", end)
	}
	headers, _ := end[0].Hooks[0]["headers"].(map[string]any)
	if headers["Authorization"] != "Bearer $AGENTMUX_API_TOKEN" {
		t.Errorf("the token's header: %v; want it read from the variable by Claude Code, never written in the file", headers)
	}
	if _, err := InstallClaude([]byte(`["not", "settings"]`), []string{PreToolUse}, h); err == nil {
		t.Error("a settings file that is not an object was taken")
	}
}

// Codex's hooks.json takes command hooks only, and no matcher means every tool; a
// Claude Code hook in the same file is not agentmux's Codex hook, so it stays.
func TestInstallCodexReplacesOnlyItsOwn(t *testing.T) {
	file := `{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "./audit.sh"}, {"type": "command", "command": "/old/agentmux hook codex --url http://old"}]}]}}`
	out, err := InstallCodex([]byte(file), []string{PreToolUse, SessionEnd}, CodexHook{Command: "/bin/agentmux hook codex --url http://127.0.0.1:9470", Timeout: 600})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Hooks map[string][]struct {
			Matcher *string `json:"matcher"`
			Hooks   []struct{ Type, Command string }
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	pre := got.Hooks[PreToolUse]
	if len(pre) != 2 || len(pre[0].Hooks) != 1 || pre[0].Hooks[0].Command != "./audit.sh" {
		t.Fatalf("the other PreToolUse hook is not kept alone in its group: %s", out)
	}
	if pre[1].Matcher != nil || pre[1].Hooks[0].Type != "command" || !strings.HasPrefix(pre[1].Hooks[0].Command, "/bin/agentmux hook codex") {
		t.Fatalf("agentmux's PreToolUse hook: %s", out)
	}
	if strings.Contains(string(out), "/old/agentmux") || len(got.Hooks[SessionEnd]) != 1 {
		t.Fatalf("the old hook stayed, or SessionEnd is missing: %s", out)
	}
}
