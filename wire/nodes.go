package wire

import "time"

// NodesBucket is the KV bucket of node heartbeats: one key per node.
const NodesBucket = "agentmux_nodes"

const (
	// HeartbeatInterval is how often a node writes its NodeInfo.
	HeartbeatInterval = 2 * time.Second
	// NodeDeadAfter is how old a heartbeat may be before its node counts as gone.
	NodeDeadAfter = 10 * time.Second
)

// NodeInfo is what a node says of itself in each heartbeat.
type NodeInfo struct {
	Name        string     `json:"name"`
	Version     string     `json:"version"`
	Started     time.Time  `json:"started"`
	Heartbeat   time.Time  `json:"heartbeat"` // by the node's clock: when it wrote this
	Hosts       []HostInfo `json:"hosts"`
	Supervisors []string   `json:"supervisors"`
	Sessions    int        `json:"sessions"` // running and queued
	// DailyUSD is the daily budget of each of its hosts in US dollars ([budgets.daily]
	// usd); 0: none. A client without the manifest reads it here.
	DailyUSD float64 `json:"daily_usd,omitempty"`
	Draining bool    `json:"draining,omitempty"`
	Stopped  bool    `json:"stopped,omitempty"` // said goodbye
	// Stored is when the NATS server stored this heartbeat, by the server's clock. The
	// node does not write it: a reader of the bucket fills it in from the entry
	// (store.Nodes), so that a node's liveness never compares two machines' clocks.
	Stored time.Time `json:"stored,omitzero"`
}

// HostInfo is one host's processes on a node.
type HostInfo struct {
	Name   string `json:"name"`
	Pool   int    `json:"pool"`
	Busy   int    `json:"busy"`
	Idle   int    `json:"idle"`   // started and free
	Queued int    `json:"queued"` // sessions waiting for a process
}

// Alive reports whether the node has not stopped and its heartbeat was stored less than
// NodeDeadAfter before serverNow, the NATS server's time (store.Nodes.List gives it).
func (n *NodeInfo) Alive(serverNow time.Time) bool {
	return !n.Stopped && serverNow.Sub(n.Stored) < NodeDeadAfter
}
