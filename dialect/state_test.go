package dialect

import (
	"reflect"
	"testing"
)

func TestStateOf(t *testing.T) {
	env := func(vars map[string]string) func(string) string {
		return func(name string) string { return vars[name] }
	}
	for _, c := range []struct {
		dialect, command string
		vars             map[string]string
		want             State
	}{
		{ClaudeCode, "claude", nil, State{Dirs: []string{"/h/.claude"}, Files: []string{"/h/.claude.json"}}},
		{ClaudeCode, "claude", map[string]string{"CLAUDE_CONFIG_DIR": "/c"}, State{Dirs: []string{"/c"}}},
		{Codex, "codex", nil, State{Dirs: []string{"/h/.codex"}}},
		{Codex, "codex", map[string]string{"CODEX_HOME": "/x"}, State{Dirs: []string{"/x"}}},
		{ACP, "/n/.bin/claude-agent-acp", map[string]string{"CLAUDE_CONFIG_DIR": "/c"}, State{Dirs: []string{"/c"}}},
		{ACP, "/n/.bin/gemini", nil, State{Dirs: []string{"/h/.gemini"}}},
		{ACP, "/n/.bin/gemini", map[string]string{"GEMINI_CLI_HOME": "/g"}, State{Dirs: []string{"/g/.gemini"}}},
		{ACP, "qwen", nil, State{Dirs: []string{"/h/.qwen"}}},
		{ACP, "opencode", map[string]string{"XDG_DATA_HOME": "/d"}, State{Dirs: []string{"/d/opencode", "/h/.config/opencode", "/h/.local/state/opencode", "/h/.cache/opencode"}}},
		{ACP, "copilot", map[string]string{"COPILOT_HOME": "/p"}, State{Dirs: []string{"/p", "/h/.cache/copilot"}}},
		{ACP, "my-agent", map[string]string{"CLAUDE_CONFIG_DIR": "/c"}, State{Dirs: []string{"/c", "/h/.gemini"}, Guessed: true}},
		{Native, "python3", nil, State{}},
	} {
		if got := StateOf(c.dialect, c.command, env(c.vars), "/h"); !reflect.DeepEqual(got, c.want) {
			t.Errorf("StateOf(%q, %q, %v) = %+v, want %+v", c.dialect, c.command, c.vars, got, c.want)
		}
	}
}
