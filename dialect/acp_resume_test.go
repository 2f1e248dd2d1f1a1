package dialect

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/protocol"
)

const claudeACPCommand = "/opt/agents/node_modules/.bin/claude-agent-acp"

// resumedPrompt is a prompt brought back in conversation id.
func resumedPrompt(id string) protocol.Prompt {
	return protocol.Prompt{Text: "fix it", Resume: &protocol.Resume{State: []byte(`{"conversation":"` + id + `"}`), Note: "moved"}}
}

// claude-agent-acp keeps its sessions as Claude Code's: its dialect carries them, marks
// each tool's result as a safe point, and goes on in a session brought back with
// session/resume, which sends no history again, prompted with the note alone.
func TestClaudeACPResumesItsSession(t *testing.T) {
	d, _ := New(ACP, Options{Dir: "/repo", Command: claudeACPCommand})
	tr, ok := d.(Transcripts)
	if !ok {
		t.Fatal("claude-agent-acp's dialect does not carry its transcripts")
	}
	if got, want := tr.Transcript([]string{"CLAUDE_CONFIG_DIR=/cfg"}, "/repo", "s-1"), filepath.Join("/cfg", "projects", "-repo", "s-1.jsonl"); got != want {
		t.Errorf("its transcript is at %s; want Claude Code's, %s", got, want)
	}
	d.Prompt(resumedPrompt("s-1"))
	_, next := acpDecode(t, d, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true,"sessionCapabilities":{"resume":{}}}}}`)
	if !strings.Contains(next, `"method":"session/resume"`) || !strings.Contains(next, `"sessionId":"s-1"`) || !strings.Contains(next, `"cwd":"/repo"`) {
		t.Fatalf("a session brought back opens with %s; want session/resume of s-1", next)
	}
	said, turn := acpDecode(t, d, `{"jsonrpc":"2.0","id":2,"result":{"models":{"currentModelId":"sonnet"}}}`)
	if !strings.Contains(turn, `"text":"moved"`) || strings.Contains(turn, "fix it") || !strings.Contains(turn, `"sessionId":"s-1"`) {
		t.Fatalf("the resumed session's prompt: %s; want the note alone, in s-1", turn)
	}
	if len(said) != 1 || !strings.Contains(string(said[0].Raw), "s-1 resumed") {
		t.Errorf("the resume said %+v", said)
	}
	if tr.Conversation() != "s-1" {
		t.Errorf("the conversation is %q; want s-1", tr.Conversation())
	}
	running, _ := acpDecode(t, d, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"tool_call_update","status":"in_progress","title":"Bash"}}}`)
	done, _ := acpDecode(t, d, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"tool_call_update","status":"completed","title":"Bash"}}}`)
	if len(running) != 1 || len(done) != 2 || done[1].Type != protocol.TypeCheckpoint || string(done[1].State) != `{"conversation":"s-1"}` {
		t.Fatalf("a tool running → %d messages, done → %+v; want its progress, then a checkpoint of s-1 once it is done", len(running), done)
	}
	// A new session on the same process is a new conversation.
	d.Prompt(protocol.Prompt{Text: "next"})
	if tr.Conversation() != "" {
		t.Errorf("a new session's conversation before session/new: %q", tr.Conversation())
	}
}

// An agent that offers session/load and not session/resume replays the history as it
// loads: that history is not published again, and the session's prompt is the note.
func TestACPLoadsASessionWithoutPublishingItsHistoryAgain(t *testing.T) {
	d, _ := New(ACP, Options{Dir: "/repo", Command: claudeACPCommand})
	d.Prompt(resumedPrompt("s-2"))
	_, next := acpDecode(t, d, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true}}}`)
	if !strings.Contains(next, `"method":"session/load"`) || !strings.Contains(next, `"sessionId":"s-2"`) {
		t.Fatalf("opens with %s; want session/load of s-2", next)
	}
	for _, u := range []string{`{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"fix it"}}`, `{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"On it."}}`} {
		if msgs, _ := acpDecode(t, d, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-2","update":`+u+`}}`); len(msgs) != 0 {
			t.Errorf("a replayed update was published again: %+v", msgs)
		}
	}
	said, turn := acpDecode(t, d, `{"jsonrpc":"2.0","id":2,"result":{}}`)
	if !strings.Contains(turn, `"text":"moved"`) || len(said) != 1 || !strings.Contains(string(said[0].Raw), "2 updates of its history replayed") {
		t.Fatalf("after the load: %+v, then %s", said, turn)
	}
	if live, _ := acpDecode(t, d, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-2","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Now."}}}}`); len(live) != 1 || live[0].Text != "Now." {
		t.Errorf("the turn's own update after the load → %+v", live)
	}
}

// A session the agent cannot bring back starts the task afresh, with its prompt and a
// word that it was begun elsewhere: the agent offers no resume, or its resume fails.
func TestACPStartsAfreshWhatItCannotResume(t *testing.T) {
	d, _ := New(ACP, Options{Dir: "/repo", Command: claudeACPCommand})
	d.Prompt(resumedPrompt("s-3"))
	_, next := acpDecode(t, d, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{"sessionCapabilities":{"resume":{}}}}}`)
	if !strings.Contains(next, `"method":"session/resume"`) {
		t.Fatalf("opens with %s", next)
	}
	said, again := acpDecode(t, d, `{"jsonrpc":"2.0","id":2,"error":{"code":-32002,"message":"Resource not found"}}`)
	if !strings.Contains(again, `"method":"session/new"`) || len(said) != 1 || !strings.Contains(string(said[0].Raw), "session/resume of conversation s-3 failed: Resource not found") {
		t.Fatalf("a failed resume → %+v, then %s; want a log of why, and session/new", said, again)
	}
	_, turn := acpDecode(t, d, `{"jsonrpc":"2.0","id":3,"result":{"sessionId":"s-4"}}`)
	if !strings.Contains(turn, "fix it") || !strings.Contains(turn, "begun on another node") {
		t.Errorf("the fresh session's prompt: %s", turn)
	}

	g, _ := New(ACP, Options{Dir: "/repo", Command: "qwen"})
	if _, ok := g.(Transcripts); ok {
		t.Error("Qwen Code's dialect claims to carry its transcripts")
	}
	g.Prompt(resumedPrompt("s-5"))
	if _, next := acpDecode(t, g, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{}}}`); !strings.Contains(next, `"method":"session/new"`) {
		t.Fatalf("an agent that offers no resume opens with %s", next)
	}
	g.Decode([]byte(`{"jsonrpc":"2.0","id":2,"result":{"sessionId":"g-1"}}`))
	if done, _ := acpDecode(t, g, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"g-1","update":{"sessionUpdate":"tool_call_update","status":"completed"}}}`); len(done) != 1 {
		t.Errorf("an agent whose conversations no node carries marked a safe point: %+v", done)
	}
}
