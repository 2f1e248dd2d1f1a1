package dialect

import (
	"testing"

	"github.com/agentmux/agentmux/protocol"
)

// FuzzDecode feeds any line to every dialect, after a session has started: none may
// panic, every message it returns has a type, and every request it returns can be
// answered.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		`{"type":"assistant","message":{"content":[{"type":"text","text":"Hi"},{"type":"tool_use","name":"Read","input":{"file_path":"a.go"}}]},"session_id":"s"}`,
		`{"type":"result","subtype":"success","is_error":false,"result":"done","num_turns":3,"total_cost_usd":0.01,"session_id":"s"}`,
		`{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"rm -rf build"}}}`,
		`{"jsonrpc":"2.0","id":2,"result":{"sessionId":"abc"}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"abc","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Fixed."}}}}`,
		`{"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{"sessionId":"abc","toolCall":{"title":"rm"},"options":[{"optionId":"y","kind":"allow_once","name":"Yes"}]}}`,
		`{"id":1,"result":{"userAgent":"codex"}}`,
		`{"id":9,"method":"item/commandExecution/requestApproval","params":{"threadId":"th1","turnId":"tu1","command":"ls"}}`,
		`{"method":"turn/completed","params":{"turn":{"id":"tu1","status":"completed"}}}`,
		`not json`, `{}`, `{"id":null}`, `[]`,
	} {
		f.Add([]byte(seed))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, line []byte) {
		for _, name := range []string{"claude-code", "acp", "codex"} {
			d, err := New(name, Options{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			d.Prompt(protocol.Prompt{Text: "go", Session: "s1"})
			msgs, _, err := d.Decode(line)
			if err != nil {
				continue
			}
			for _, m := range msgs {
				if m == nil || m.Type == "" {
					t.Fatalf("%s decoded %q into a message without a type: %+v", name, line, m)
				}
				if m.Type.IsRequest() {
					d.Answer(m, protocol.Response{InReplyTo: m.Type, ID: m.ID, Value: []byte(`"yes"`), Outcome: protocol.OutcomeAnswered}, "fuzz")
				}
			}
		}
	})
}
