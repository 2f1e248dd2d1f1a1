package ask

import (
	"slices"
	"testing"
	"time"

	"github.com/agentmux/agentmux/wire"
)

// TestDirectoryListsLiveMembers: the members of a supervisor are the nodes serving it
// whose heartbeat the server stored within NodeDeadAfter, not draining, not stopped,
// whatever this machine's clock says: here it is two minutes ahead of the server's.
func TestDirectoryListsLiveMembers(t *testing.T) {
	server := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	local := server.Add(2 * time.Minute)
	d := NewDirectory()
	d.now = func() time.Time { return local }
	for _, n := range []*wire.NodeInfo{
		{Name: "a", Stored: server, Supervisors: []string{"s", "x"}},
		{Name: "b", Stored: server.Add(-time.Second), Supervisors: []string{"s"}},
		{Name: "draining", Stored: server, Supervisors: []string{"s"}, Draining: true},
		{Name: "stopped", Stored: server, Supervisors: []string{"s"}, Stopped: true},
		{Name: "gone", Stored: server.Add(-wire.NodeDeadAfter - time.Second), Supervisors: []string{"s"}},
		{Name: "agents", Stored: server},
		// The node's own clock is an hour behind: its heartbeat field says nothing here.
		{Name: "behind", Stored: server, Heartbeat: server.Add(-time.Hour), Supervisors: []string{"s"}},
	} {
		d.Update(n.Name, n)
	}
	if got := d.Members("s"); !slices.Equal(got, []string{"a", "b", "behind"}) {
		t.Fatalf("members of s: %v; want a, b and behind", got)
	}
	if got := d.Members("x"); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("members of x: %v; want a", got)
	}
	if d.Gone("a") || d.Gone("behind") || !d.Gone("gone") || !d.Gone("stopped") {
		t.Fatal("a node is gone when its heartbeat is NodeDeadAfter old by the server's clock, or it stopped")
	}

	// No heartbeat arrives for NodeDeadAfter on this machine's clock: the server's time
	// moves on by as much, and every node is gone.
	local = local.Add(wire.NodeDeadAfter)
	if got := d.Members("s"); len(got) != 0 {
		t.Fatalf("members of s after %v without a heartbeat: %v", wire.NodeDeadAfter, got)
	}
	// One heartbeat comes: the server's time is its stamp again.
	d.Update("b", &wire.NodeInfo{Name: "b", Stored: server.Add(wire.NodeDeadAfter), Supervisors: []string{"s"}})
	if got := d.Members("s"); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("members of s after b's heartbeat: %v; want b", got)
	}
	d.Update("b", nil)
	if got := d.Members("s"); len(got) != 0 {
		t.Fatalf("members of s once b's entry is gone: %v", got)
	}
}

// TestUnknownNodeIsGoneOnceUnheardLongEnough: a node the bucket does not hold is not
// gone when first asked about (it may not have written its first heartbeat yet), and
// is once NodeDeadAfter has passed here without one; a heartbeat makes it known.
func TestUnknownNodeIsGoneOnceUnheardLongEnough(t *testing.T) {
	local := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	d := NewDirectory()
	d.now = func() time.Time { return local }
	if d.Gone("new") || d.Gone("late") {
		t.Fatal("a node first asked about is gone at once")
	}
	local = local.Add(wire.NodeDeadAfter / 2)
	d.Update("late", &wire.NodeInfo{Name: "late", Stored: local.Add(-time.Hour)}) // the server's clock, an hour behind
	local = local.Add(wire.NodeDeadAfter/2 + time.Second)
	if !d.Gone("new") {
		t.Fatalf("a node unheard of for %v is not gone", wire.NodeDeadAfter)
	}
	if d.Gone("late") {
		t.Fatal("a node whose heartbeat came is gone")
	}
}
