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
		dialect string
		vars    map[string]string
		want    State
	}{
		{ClaudeCode, nil, State{Dirs: []string{"/h/.claude"}, Files: []string{"/h/.claude.json"}}},
		{ClaudeCode, map[string]string{"CLAUDE_CONFIG_DIR": "/c"}, State{Dirs: []string{"/c"}}},
		{Codex, nil, State{Dirs: []string{"/h/.codex"}}},
		{Codex, map[string]string{"CODEX_HOME": "/x"}, State{Dirs: []string{"/x"}}},
		{ACP, map[string]string{"CLAUDE_CONFIG_DIR": "/c"}, State{Dirs: []string{"/c", "/h/.gemini"}}},
		{Native, nil, State{}},
	} {
		if got := StateOf(c.dialect, env(c.vars), "/h"); !reflect.DeepEqual(got, c.want) {
			t.Errorf("StateOf(%q, %v) = %+v, want %+v", c.dialect, c.vars, got, c.want)
		}
	}
}
