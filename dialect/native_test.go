package dialect

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/protocol"
)

// TestNativeWritesAgentmuxsOwnLines: the native dialect is agentmux's protocol: its
// lines are canonical, it inits with the host's params (none without), prompts in JSON
// or as plain text, tells a retry what the earlier attempt did, and a typed result's
// new prompt the schema it missed.
func TestNativeWritesAgentmuxsOwnLines(t *testing.T) {
	for _, name := range []string{"", Native} {
		d, err := New(name, Options{Params: json.RawMessage(`{"model":"m"}`)})
		if err != nil || !d.Canonical() || !d.Reusable() || d.Args() != nil || d.SessionArgs("last") != nil {
			t.Fatalf("New(%q) = %v, %v", name, d, err)
		}
	}
	d, _ := New(Native, Options{Params: json.RawMessage(`{"model":"m"}`)})
	prev := &protocol.PreviousAttempt{Attempt: 0, Error: "crashed", Requests: []protocol.PriorAnswer{{Type: "question", Text: "go?", Value: json.RawMessage(`"yes"`), Decider: "rule:r"}}}
	for _, c := range []struct {
		what string
		got  []byte
		want string
	}{
		{"init", d.Init(), `{"type":"init","params":{"model":"m"}}`},
		{"prompt", d.Prompt(protocol.Prompt{Text: "fix it", Session: "s1"}), `{"type":"prompt","text":"fix it","session":"s1"}`},
		{"retry", d.Prompt(protocol.Prompt{Text: "fix it", Session: "s1", PreviousAttempt: prev}), `"previous_attempt":{"attempt":0,"error":"crashed"`},
		{"continue", d.Continue(protocol.Prompt{Text: "again", Session: "s1", Schema: json.RawMessage(`{"type":"object"}`), SchemaError: "not an object"}),
			`"schema":{"type":"object"},"schema_error":"not an object"`},
		{"answer", d.Answer(nil, protocol.Response{InReplyTo: protocol.TypeQuestion, ID: "q1", Value: json.RawMessage(`"yes"`), Outcome: protocol.OutcomeAnswered}, ""), `"id":"q1"`},
		{"interrupt", d.Interrupt("stop"), `{"type":"interrupt","reason":"stop"}`},
		{"message", d.Message("hi"), `{"type":"message","text":"hi"}`},
	} {
		if !strings.Contains(string(c.got), c.want) || !strings.HasSuffix(string(c.got), "\n") {
			t.Errorf("%s: %s; want a line with %s", c.what, c.got, c.want)
		}
	}
	if none, _ := New(Native, Options{}); none.Init() != nil {
		t.Error("a host without params is sent an init")
	}
	text, _ := New(Native, Options{TextInput: true})
	if got := string(text.Prompt(protocol.Prompt{Text: "fix\nit", Session: "s1", PreviousAttempt: prev})); !strings.HasPrefix(got, "fix it  An earlier attempt of this task (attempt 0) failed: crashed") {
		t.Errorf("a plain-text prompt: %q", got)
	}
	msgs, reply, err := d.Decode([]byte(`{"type":"progress","message":"working"}`))
	if err != nil || reply != nil || len(msgs) != 1 || msgs[0].Type != protocol.TypeProgress {
		t.Errorf("decode: %v %s %v", msgs, reply, err)
	}
}
