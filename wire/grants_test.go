package wire

import (
	"encoding/json"
	"testing"
	"time"
)

func TestGrantCovers(t *testing.T) {
	at := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	p := &PendingRequest{ID: "h-1", Host: "w", Session: "s-1", Request: "a1", Type: "approval", Text: "npm test",
		Value: json.RawMessage(`"yes"`), Responder: "ana", AnsweredAt: at}
	if GrantFrom(p) != nil {
		t.Fatalf("an answer for its request alone gave a grant")
	}
	p.Scope = ScopeHost
	host := GrantFrom(p)
	if host.ID != "g-h-1" || host.By != "human:ana" || host.Request != "a1" || !host.Expires.Equal(at.Add(HostGrantFor)) || !IsGrantID(host.ID) {
		t.Fatalf("host grant %+v", host)
	}
	p.Scope = ScopeSession
	session := GrantFrom(p)
	for _, c := range []struct {
		name                     string
		g                        *Grant
		host, session, typ, text string
		at                       time.Time
		want                     bool
	}{
		{"the host's, another session", host, "w", "s-2", "approval", "npm test", at.Add(time.Minute), true},
		{"the host's, past its hour", host, "w", "s-2", "approval", "npm test", at.Add(HostGrantFor), false},
		{"the host's, another host", host, "v", "s-2", "approval", "npm test", at, false},
		{"the host's, other text", host, "w", "s-2", "approval", "npm test; rm -rf /", at, false},
		{"the host's, a question", host, "w", "s-2", "question", "npm test", at, false},
		{"the session's, in it", session, "w", "s-1", "approval", "npm test", at.Add(24 * time.Hour), true},
		{"the session's, another", session, "w", "s-2", "approval", "npm test", at, false},
	} {
		if got := c.g.Covers(c.host, c.session, c.typ, c.text, c.at); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
