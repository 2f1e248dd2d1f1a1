package dialect

import (
	"strings"
	"testing"

	"github.com/agentmux/agentmux/protocol"
)

// Continue, after a session's result, is another turn of the same conversation: the
// ACP session and the Codex thread the result came from, one more Claude Code message.
func TestContinueKeepsTheConversation(t *testing.T) {
	acp, _ := New(ACP, Options{Dir: "/repo"})
	acp.Prompt(protocol.Prompt{Text: "fix it", Session: "s1"})
	acpDecode(t, acp, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}`)
	acpDecode(t, acp, `{"jsonrpc":"2.0","id":2,"result":{"sessionId":"abc"}}`)
	acpDecode(t, acp, `{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`)
	if got := string(acp.Continue(protocol.Prompt{Text: "again, as JSON"})); !strings.Contains(got, `"method":"session/prompt"`) || !strings.Contains(got, `"sessionId":"abc"`) ||
		!strings.Contains(got, `"text":"again, as JSON"`) {
		t.Fatalf("acp continue: %s", got)
	}
	if again, _ := acpDecode(t, acp, `{"jsonrpc":"2.0","id":4,"result":{"stopReason":"end_turn"}}`); !strings.Contains(string(again[0].Raw), `"session_id":"abc"`) {
		t.Fatalf("acp second result %+v", again[0])
	}

	codex, _ := New(Codex, Options{Dir: "/repo"})
	codex.Prompt(protocol.Prompt{Text: "fix it", Session: "s1"})
	acpDecode(t, codex, `{"id":1,"result":{"userAgent":"codex"}}`)
	acpDecode(t, codex, `{"id":2,"result":{"thread":{"id":"th1"}}}`)
	acpDecode(t, codex, `{"method":"turn/completed","params":{"turn":{"id":"tu1","status":"completed"}}}`)
	if got := string(codex.Continue(protocol.Prompt{Text: "again"})); !strings.Contains(got, `"method":"turn/start"`) || !strings.Contains(got, `"threadId":"th1"`) {
		t.Fatalf("codex continue: %s", got)
	}

	claude, _ := New(ClaudeCode, Options{Dir: "/repo"})
	if got := string(claude.Continue(protocol.Prompt{Text: "again"})); !strings.Contains(got, `"type":"user"`) || !strings.Contains(got, `"content":"again"`) {
		t.Fatalf("claude continue: %s", got)
	}
}
