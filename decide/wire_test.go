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
	r := RequestOf(ask, "_INBOX.x", time.Now())
	if r.Session != "s-1" || r.Host != "coder" || r.Type != "approval" || r.ID != "r1" || r.Text != ask.Text || !r.Deadline.Equal(deadline) ||
		string(r.Default) != `"no"` || string(r.Request) != string(ask.Request) || r.ReplyTo != "_INBOX.x" || !r.PostProcess || r.Node != "n1" || r.Attempt != 2 {
		t.Errorf("RequestOf(%+v) = %+v", ask, r)
	}
	if r := RequestOf(&wire.Ask{ID: "q"}, "", time.Now()); !r.Deadline.IsZero() {
		t.Errorf("an ask without a deadline has deadline %v", r.Deadline)
	}
	// With the time left, the deadline is the arrival plus it, whatever the asker's
	// clock said (two minutes behind here).
	arrived := time.Now()
	ask.Timeout, ask.Deadline = 30_000, arrived.Add(-2*time.Minute+30*time.Second).UnixMilli()
	if r := RequestOf(ask, "", arrived); !r.Deadline.Equal(arrived.Add(30 * time.Second)) {
		t.Errorf("an ask with 30 s left, arrived at %v, has deadline %v", arrived, r.Deadline)
	}
	for _, c := range []struct {
		dec  Decision
		want wire.Reply
	}{
		{Decision{Value: json.RawMessage(`"yes"`), Decider: "rule:qa", Reason: "matched", Scope: wire.ScopeSession},
			wire.Reply{Value: json.RawMessage(`"yes"`), Decider: "rule:qa", Reason: "matched", Scope: wire.ScopeSession}},
		{Decision{Verdict: Pass, Decider: "rule:qa"}, wire.Reply{Kind: wire.ReplyDefault, Decider: "rule:qa"}}, // nobody took it: the default
		{Decision{Verdict: Decline, Decider: "command:x", Reason: "declined"}, wire.Reply{Kind: wire.ReplyCancelled, Decider: "command:x", Reason: "declined"}},
	} {
		got, _ := json.Marshal(c.dec.Reply())
		want, _ := json.Marshal(c.want)
		if string(got) != string(want) {
			t.Errorf("%+v.Reply() = %s; want %s", c.dec, got, want)
		}
	}
}
