package dialect

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/protocol"
)

const (
	testTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	testTracestate  = "agentmux=1"
)

// lastLine decodes the last JSON line of out.
func lastLine(t *testing.T, out []byte) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &m); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	return m
}

// wantTrace checks that v is the test's W3C trace context.
func wantTrace(t *testing.T, what string, v any) {
	t.Helper()
	tc, _ := v.(map[string]any)
	if tc["traceparent"] != testTraceparent || tc["tracestate"] != testTracestate {
		t.Errorf("%s carries trace context %v; want traceparent %s, tracestate %s", what, v, testTraceparent, testTracestate)
	}
}

// TestPromptsCarryTheTraceContext: a traced session's prompt gives the agent the
// session span's W3C context where its protocol reads it: the native prompt line's
// traceparent and tracestate, each of Codex's turn/start requests' trace, and each of
// ACP's session/prompt params' _meta (Claude Code reads TRACEPARENT from its
// environment instead, which the agent's actor sets). Without one, none is written.
func TestPromptsCarryTheTraceContext(t *testing.T) {
	traced := protocol.Prompt{Text: "fix it", Session: "s1", Traceparent: testTraceparent, Tracestate: testTracestate}

	native, _ := New(Native, Options{})
	line := lastLine(t, native.Prompt(traced))
	wantTrace(t, "the native prompt", line)
	if line["text"] != "fix it" || line["session"] != "s1" {
		t.Errorf("the native prompt: %v", line)
	}
	wantTrace(t, "the native continue", lastLine(t, native.Continue(traced)))
	if plain := string(native.Prompt(protocol.Prompt{Text: "fix it", Session: "s1"})); strings.Contains(plain, "trace") {
		t.Errorf("an untraced native prompt: %s", plain)
	}

	codex, _ := New(Codex, Options{Dir: "/repo"})
	codex.Prompt(traced)
	acpDecode(t, codex, `{"id":1,"result":{"userAgent":"codex"}}`)
	_, reply := acpDecode(t, codex, `{"id":2,"result":{"thread":{"id":"th1"}}}`)
	turn := lastLine(t, []byte(reply))
	if turn["method"] != "turn/start" {
		t.Fatalf("codex after thread/start wrote %v", turn)
	}
	wantTrace(t, "codex's turn/start", turn["trace"])
	acpDecode(t, codex, `{"method":"turn/completed","params":{"turn":{"id":"tu1","status":"completed"}}}`)
	wantTrace(t, "codex's next turn/start", lastLine(t, codex.Continue(traced))["trace"])

	acp, _ := New(ACP, Options{Dir: "/repo"})
	acp.Prompt(traced)
	acpDecode(t, acp, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}`)
	_, reply = acpDecode(t, acp, `{"jsonrpc":"2.0","id":2,"result":{"sessionId":"abc"}}`)
	prompt := lastLine(t, []byte(reply))
	params, _ := prompt["params"].(map[string]any)
	if prompt["method"] != "session/prompt" || params["sessionId"] != "abc" {
		t.Fatalf("acp after session/new wrote %v", prompt)
	}
	wantTrace(t, "acp's session/prompt _meta", params["_meta"])

	untraced, _ := New(ACP, Options{Dir: "/repo"})
	untraced.Prompt(protocol.Prompt{Text: "fix it"})
	acpDecode(t, untraced, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}`)
	if _, reply := acpDecode(t, untraced, `{"jsonrpc":"2.0","id":2,"result":{"sessionId":"abc"}}`); strings.Contains(reply, "_meta") {
		t.Errorf("an untraced acp prompt: %s", reply)
	}
}
