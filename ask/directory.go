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
//
// It never compares this machine's clock with another's. A heartbeat's age is the
// server's time now less the server's time of storing it; the server's time now is
// the newest heartbeat's stamp plus the time passed here since it arrived, on this
// process's monotonic clock. Every live node writes one every HeartbeatInterval, this
// node included, so the estimate is never older than that.
type Directory struct {
	mu    sync.Mutex // protects the fields below
	nodes map[string]*wire.NodeInfo
	// newest is the latest server stamp of any heartbeat, and arrived when it came.
	newest, arrived time.Time
	// unknown holds the nodes Gone was asked about that the bucket does not hold, and
	// since when (this process's clock).
	unknown map[string]time.Time
	now     func() time.Time
}

// NewDirectory returns an empty directory; store.Nodes.Watch fills it (Update).
func NewDirectory() *Directory {
	return &Directory{nodes: map[string]*wire.NodeInfo{}, unknown: map[string]time.Time{}, now: time.Now}
}

// Update records the latest heartbeat of node, with the server's stamp (Stored); a nil
// info forgets it.
func (d *Directory) Update(node string, info *wire.NodeInfo) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if info == nil {
		delete(d.nodes, node)
		return
	}
	d.nodes[node] = info
	delete(d.unknown, node)
	if info.Stored.After(d.newest) {
		d.newest, d.arrived = info.Stored, d.now()
	}
}

// serverNow is the server's time, as the newest heartbeat tells it. Callers hold mu.
func (d *Directory) serverNow() time.Time {
	return d.newest.Add(d.now().Sub(d.arrived))
}

// Gone reports whether node has stopped or missed its heartbeats for NodeDeadAfter. A
// node the bucket does not hold (its entry expired, or it has not written its first
// heartbeat yet) counts as gone once it has gone unheard for NodeDeadAfter since Gone
// was first asked about it.
func (d *Directory) Gone(node string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if n, ok := d.nodes[node]; ok {
		return !n.Alive(d.serverNow())
	}
	now := d.now()
	for name, since := range d.unknown {
		if now.Sub(since) > forgetUnknown {
			delete(d.unknown, name) // no longer asked about: its requests are settled
		}
	}
	since, ok := d.unknown[node]
	if !ok {
		since = now
		d.unknown[node] = since
	}
	return now.Sub(since) > wire.NodeDeadAfter
}

// forgetUnknown is how long a node the bucket does not hold is remembered after Gone
// was first asked about it: long past the NodeDeadAfter that makes it gone.
const forgetUnknown = 3 * wire.NodeDeadAfter

// Members returns the live nodes serving supervisor, by name: heartbeat recent, not
// draining or stopped.
func (d *Directory) Members(supervisor string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.serverNow()
	var out []string
	for name, n := range d.nodes {
		if n.Alive(now) && !n.Draining && slices.Contains(n.Supervisors, supervisor) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
