package decide

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agentmux/agentmux/wire"
)

func TestRequestOfAndReply(t *testing.T) {
	deadline := time.UnixMilli(time.Now().Add(time.Minute).UnixMilli())
	ask := &wire.Ask{Session: "s-1", Host: "coder", Type: "approval", ID: "r1", Text: "Bash: rm -rf build",
		Deadline: deadline.UnixMilli(), Default: json.RawMessage(`"no"`), Request: json.RawMessage(`{"type":"approval","id":"r1"}`),
		PostProcess: true, Node: "n1", Attempt: 2}
	r := RequestOf(ask, "_INBOX.x")
	if r.Session != "s-1" || r.Host != "coder" || r.Type != "approval" || r.ID != "r1" || r.Text != ask.Text || !r.Deadline.Equal(deadline) ||
		string(r.Default) != `"no"` || string(r.Request) != string(ask.Request) || r.ReplyTo != "_INBOX.x" || !r.PostProcess || r.Node != "n1" || r.Attempt != 2 {
		t.Errorf("RequestOf(%+v) = %+v", ask, r)
	}
	if r := RequestOf(&wire.Ask{ID: "q"}, ""); !r.Deadline.IsZero() {
		t.Errorf("an ask without a deadline has deadline %v", r.Deadline)
	}
	for _, c := range []struct {
		dec  Decision
		want wire.Reply
	}{
		{Decision{Value: json.RawMessage(`"yes"`), Decider: "rule:qa", Reason: "matched", Scope: wire.ScopeSession},
			wire.Reply{Value: json.RawMessage(`"yes"`), Decider: "rule:qa", Reason: "matched", Scope: wire.ScopeSession}},
		{Decision{Ask: true, Decider: "rule:qa"}, wire.Reply{UseDefault: true, Decider: "rule:qa"}}, // nobody took it: the default
		{Decision{Cancelled: true, Decider: "command:x", Reason: "declined"}, wire.Reply{Cancelled: true, Decider: "command:x", Reason: "declined"}},
	} {
		got, _ := json.Marshal(c.dec.Reply())
		want, _ := json.Marshal(c.want)
		if string(got) != string(want) {
			t.Errorf("%+v.Reply() = %s; want %s", c.dec, got, want)
		}
	}
}
