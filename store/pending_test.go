package store

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentmux/agentmux/wire"
)

// TestYesForSessionIsAnApprovalForTheSession: a person's "yes for session" to an
// approval is taken as the README says: yes, standing for the rest of the session; to a
// question it is the words themselves.
func TestYesForSessionIsAnApprovalForTheSession(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	pending, err := OpenPending(ctx, b.JS, b.Conn)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id, typ, body string
		value, scope  string
	}{
		{"h-a", "approval", `{"type":"approval","id":"a1","description":"deploy"}`, `"yes"`, wire.ScopeSession},
		{"h-q", "question", `{"type":"question","id":"q1","question":"what now?"}`, `"yes for session"`, ""},
	} {
		p := &wire.PendingRequest{ID: c.id, Supervisor: "oncall", Host: "w", Session: "s1", Request: "r1", Type: c.typ,
			Body: json.RawMessage(c.body), Created: time.Now(), Deadline: time.Now().Add(time.Minute), State: wire.StatePending}
		if _, err := pending.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		got, err := pending.Respond(ctx, c.id, "alice", wire.RespondRequest{Value: json.RawMessage(`"yes for session"`)})
		if err != nil {
			t.Fatalf("%s: %v", c.typ, err)
		}
		if string(got.Value) != c.value || got.Scope != c.scope || got.Responder != "alice" {
			t.Errorf("%s answered %s, scope %q; want %s, scope %q", c.typ, got.Value, got.Scope, c.value, c.scope)
		}
	}
}
