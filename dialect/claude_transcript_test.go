package dialect

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/protocol"
)

// TestClaudeTranscriptWhereTheCLIKeepsIt: the folder names are Claude Code's own, as
// its JavaScript makes them (the expected names were printed by that function under
// node), and the config dir is CLAUDE_CONFIG_DIR's, or HOME's .claude.
func TestClaudeTranscriptWhereTheCLIKeepsIt(t *testing.T) {
	long := "/work/" + strings.Repeat("verylongdirectoryname_", 10) + "é/ü"
	for dir, want := range map[string]string{
		"/tmp/x y/ws.é": "-tmp-x-y-ws--",
		long:            "-work" + strings.Repeat("-verylongdirectoryname", 8) + "-verylongdirectoryn-pkig6r",
	} {
		if got := claudeProject(dir); got != want {
			t.Errorf("the project folder of %q is %q; want %q", dir, got, want)
		}
	}
	c := newClaude()
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{"HOME=/home/a"}, "/home/a/.claude/projects/-w-r/s1.jsonl"},
		{[]string{"HOME=/home/a", "CLAUDE_CONFIG_DIR=/c1", "CLAUDE_CONFIG_DIR=/c2"}, "/c2/projects/-w-r/s1.jsonl"},
	} {
		if got := c.Transcript(tc.env, "/w/r", "s1"); got != filepath.FromSlash(tc.want) {
			t.Errorf("with %v the transcript is %s; want %s", tc.env, got, tc.want)
		}
	}
}

// TestClaudeMarksItsSafePoints: once the CLI said its conversation's id, a tool's
// result is a checkpoint whose state is that id; before, there is nothing to resume.
func TestClaudeMarksItsSafePoints(t *testing.T) {
	d, _ := New(ClaudeCode, Options{Dir: "/tmp"})
	result := `{"type":"user","message":{"content":[{"type":"tool_result","content":"ok"}]}}`
	for _, m := range decode(t, d, result) {
		if m.Type == protocol.TypeCheckpoint {
			t.Fatalf("a checkpoint before the conversation has an id: %s", m.Raw)
		}
	}
	decode(t, d, `{"type":"system","subtype":"init","session_id":"c-42","model":"m","claude_code_version":"2"}`)
	if got := d.(Transcripts).Conversation(); got != "c-42" {
		t.Fatalf("the conversation is %q; want c-42", got)
	}
	msgs := decode(t, d, result)
	last := msgs[len(msgs)-1]
	if len(msgs) != 2 || msgs[0].Type != protocol.TypeProgress || last.Type != protocol.TypeCheckpoint || string(last.State) != `{"conversation":"c-42"}` {
		t.Fatalf("a tool's result → %+v; want its progress, then a checkpoint of conversation c-42", msgs)
	}
	if got := promptText(protocol.Prompt{Text: "the task", Resume: &protocol.Resume{Note: "moved"}}); got != "moved" {
		t.Errorf("a resumed conversation is prompted %q; want the note alone", got)
	}
}
