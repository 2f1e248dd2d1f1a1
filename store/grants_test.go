package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentmux/agentmux/wire"
)

// BenchmarkGrantsFind is what every request no standing answer covers pays to ask the
// fleet's grants: none, and a hundred of other requests.
func BenchmarkGrantsFind(b *testing.B) {
	now := time.Now()
	for _, n := range []int{0, 100} {
		g := newGrants(nil)
		for i := range n {
			id := fmt.Sprintf("g-h-%d", i)
			g.set(&wire.Grant{ID: id, Scope: wire.ScopeHost, Host: "w", Type: "approval", Text: fmt.Sprintf("npm run task-%d", i), Expires: now.Add(time.Hour)})
		}
		b.Run(fmt.Sprintf("grants=%d", n), func(b *testing.B) {
			for b.Loop() {
				if g.Find("w", "s-1", "approval", "npm test", now) != nil {
					b.Fatal("found a grant for another request")
				}
			}
		})
	}
}

// The index finds a grant by its request, and forgets it when it is replaced or revoked.
func TestGrantsIndex(t *testing.T) {
	now := time.Now()
	g := newGrants(nil)
	a := &wire.Grant{ID: "g-h-1", Scope: wire.ScopeHost, Host: "w", Type: "approval", Text: "npm test", Expires: now.Add(time.Hour)}
	g.set(a)
	if got := g.Find("w", "s-9", "approval", "npm test", now); got != a {
		t.Fatalf("Find = %+v", got)
	}
	moved := *a
	moved.Text = "npm run lint"
	g.set(&moved)
	if g.Find("w", "s-9", "approval", "npm test", now) != nil || g.Find("w", "s-9", "approval", "npm run lint", now) == nil {
		t.Fatal("a grant replaced under its id is found by its old request, or not by its new one")
	}
	g.unset(a.ID)
	if g.Find("w", "s-9", "approval", "npm run lint", now) != nil || len(g.byKey) != 0 || len(g.Standing(now)) != 0 {
		t.Fatalf("a grant unset is still held: %v", g.byKey)
	}
}
