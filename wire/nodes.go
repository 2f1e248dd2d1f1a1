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
	Heartbeat   time.Time  `json:"heartbeat"`
	Hosts       []HostInfo `json:"hosts"`
	Supervisors []string   `json:"supervisors"`
	Sessions    int        `json:"sessions"` // running and queued
	Draining    bool       `json:"draining,omitempty"`
	Stopped     bool       `json:"stopped,omitempty"` // said goodbye
}

// HostInfo is one host's processes on a node.
type HostInfo struct {
	Name   string `json:"name"`
	Pool   int    `json:"pool"`
	Busy   int    `json:"busy"`
	Idle   int    `json:"idle"`   // started and free
	Queued int    `json:"queued"` // sessions waiting for a process
}

// Alive reports whether the node heartbeat is recent at now and it has not stopped.
func (n *NodeInfo) Alive(now time.Time) bool {
	return !n.Stopped && now.Sub(n.Heartbeat) < NodeDeadAfter
}
