package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

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
}

// OpenNodes opens the heartbeat bucket a node declared.
func OpenNodes(ctx context.Context, js jetstream.JetStream) (*Nodes, error) {
	kv, err := js.KeyValue(ctx, NodesBucket)
	if err != nil {
		return nil, fmt.Errorf("bus: node bucket %s: %w; a node declares it: is `runtime up` running on this NATS?", NodesBucket, err)
	}
	return &Nodes{kv: kv}, nil
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
	keys, err := n.kv.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("bus: list nodes: %w", err)
	}
	var out []*NodeInfo
	for key := range keys.Keys() {
		e, err := n.kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("bus: read node %s: %w", key, err)
		}
		var info NodeInfo
		if err := json.Unmarshal(e.Value(), &info); err != nil {
			return nil, fmt.Errorf("bus: node %s's heartbeat is corrupt: %w", key, err)
		}
		out = append(out, &info)
	}
	slices.SortFunc(out, func(a, b *NodeInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
