package ask

import (
	"slices"
	"sync"
	"time"

	"github.com/agentmux/agentmux/wire"
)

// Directory knows which live nodes serve which supervisors, from the heartbeats in the
// nodes bucket (store.Nodes.Watch). The Asker asks it for another member when one falls
// silent: a hung or cut-off member stays in its queue group until the server drops its
// connection (minutes), and NATS prefers a queue member on the asker's own server, so
// asking the group again could reach the silent member each time.
type Directory struct {
	mu    sync.RWMutex // protects nodes
	nodes map[string]*wire.NodeInfo
	now   func() time.Time
}

// NewDirectory returns an empty directory; store.Nodes.Watch fills it (Update).
func NewDirectory() *Directory {
	return &Directory{nodes: map[string]*wire.NodeInfo{}, now: time.Now}
}

// Update records the latest heartbeat of node; a nil info forgets it.
func (d *Directory) Update(node string, info *wire.NodeInfo) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if info == nil {
		delete(d.nodes, node)
		return
	}
	d.nodes[node] = info
}

// Gone reports whether node has stopped or missed its heartbeats for NodeDeadAfter; a
// node the directory never saw counts as gone once since (when something showed it
// alive) is NodeDeadAfter past.
func (d *Directory) Gone(node string, since, now time.Time) bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if n, ok := d.nodes[node]; ok {
		return !n.Alive(now)
	}
	return now.Sub(since) > wire.NodeDeadAfter
}

// Members returns the live nodes serving supervisor, by name: heartbeat recent, not
// draining or stopped.
func (d *Directory) Members(supervisor string) []string {
	d.mu.RLock()
	defer d.mu.RUnlock()
	now := d.now()
	var out []string
	for name, n := range d.nodes {
		if n.Alive(now) && !n.Draining && slices.Contains(n.Supervisors, supervisor) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
