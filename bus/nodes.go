package bus

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// NodesBucket is the KV bucket of node heartbeats: one key per node.
const NodesBucket = "agentmux_nodes"

const (
	// HeartbeatInterval is how often a node writes its NodeInfo.
	HeartbeatInterval = 2 * time.Second
	// NodeDeadAfter is how old a heartbeat may be before its node counts as gone.
	NodeDeadAfter = 10 * time.Second
	// nodesTTL is how long a gone node's entry stays listed.
	nodesTTL = 10 * time.Minute
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

// Nodes reads and writes node heartbeats.
type Nodes struct {
	kv jetstream.KeyValue
	nc *nats.Conn
}

// OpenNodes opens the heartbeat bucket a node declared.
func OpenNodes(ctx context.Context, js jetstream.JetStream) (*Nodes, error) {
	kv, err := openBucket(ctx, js, NodesBucket, "node")
	if err != nil {
		return nil, err
	}
	return &Nodes{kv: kv, nc: js.Conn()}, nil
}

// Put writes one heartbeat.
func (n *Nodes) Put(ctx context.Context, info *NodeInfo) error {
	data, _ := json.Marshal(info)
	if _, err := n.kv.Put(ctx, info.Name, data); err != nil {
		return fmt.Errorf("bus: heartbeat of %s: %w", info.Name, err)
	}
	return nil
}

// List returns every node heard of lately, by name.
func (n *Nodes) List(ctx context.Context) ([]*NodeInfo, error) {
	var out []*NodeInfo
	err := scanBucket(ctx, n.nc, NodesBucket, func(key string, value []byte) error {
		var info NodeInfo
		if err := json.Unmarshal(value, &info); err != nil {
			return fmt.Errorf("bus: node heartbeat %s is corrupt: %w", key, err)
		}
		out = append(out, &info)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("bus: list nodes: %w", err)
	}
	slices.SortFunc(out, func(a, b *NodeInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
