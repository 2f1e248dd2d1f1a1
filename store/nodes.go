package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentmux/agentmux/wire"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// nodesTTL is how long a gone node's entry stays listed.
const nodesTTL = 10 * time.Minute

// Nodes reads and writes node heartbeats.
type Nodes struct {
	kv jetstream.KeyValue
	nc *nats.Conn
}

// OpenNodes opens the heartbeat bucket a node declared.
func OpenNodes(ctx context.Context, js jetstream.JetStream) (*Nodes, error) {
	kv, err := openBucket(ctx, js, wire.NodesBucket, "node")
	if err != nil {
		return nil, err
	}
	return &Nodes{kv: kv, nc: js.Conn()}, nil
}

// Put writes one heartbeat.
func (n *Nodes) Put(ctx context.Context, info *wire.NodeInfo) error {
	data, _ := json.Marshal(info)
	if _, err := n.kv.Put(ctx, info.Name, data); err != nil {
		return fmt.Errorf("store: heartbeat of %s: %w", info.Name, err)
	}
	return nil
}

// List returns every node heard of lately, by name, each with the server's time of
// storing its heartbeat (Stored), and the server's time now: what NodeInfo.Alive
// compares.
func (n *Nodes) List(ctx context.Context) (nodes []*wire.NodeInfo, serverNow time.Time, err error) {
	err = scanBucket(ctx, n.nc, wire.NodesBucket, func(key string, value []byte, stored time.Time) error {
		var info wire.NodeInfo
		if err := json.Unmarshal(value, &info); err != nil {
			return fmt.Errorf("store: node heartbeat %s is corrupt: %w", key, err)
		}
		info.Stored = stored
		nodes = append(nodes, &info)
		return nil
	})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("store: list nodes: %w", err)
	}
	if serverNow, err = n.serverNow(ctx); err != nil {
		return nil, time.Time{}, fmt.Errorf("store: list nodes: %w", err)
	}
	slices.SortFunc(nodes, func(a, b *wire.NodeInfo) int { return strings.Compare(a.Name, b.Name) })
	return nodes, serverNow, nil
}

// Get returns node's latest heartbeat and its revision in the bucket, with the
// server's time now; a nil NodeInfo when the bucket holds none.
func (n *Nodes) Get(ctx context.Context, node string) (info *wire.NodeInfo, revision uint64, serverNow time.Time, err error) {
	e, err := n.kv.Get(ctx, node)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return nil, 0, time.Time{}, nil
	case err != nil:
		return nil, 0, time.Time{}, fmt.Errorf("store: heartbeat of %s: %w", node, err)
	}
	info = &wire.NodeInfo{}
	if err := json.Unmarshal(e.Value(), info); err != nil {
		return nil, 0, time.Time{}, fmt.Errorf("store: node heartbeat %s is corrupt: %w", node, err)
	}
	info.Stored = e.Created()
	if serverNow, err = n.serverNow(ctx); err != nil {
		return nil, 0, time.Time{}, fmt.Errorf("store: heartbeat of %s: %w", node, err)
	}
	return info, e.Revision(), serverNow, nil
}

// serverNow is the NATS server's time, as it stamps the bucket's stream information.
func (n *Nodes) serverNow(ctx context.Context) (time.Time, error) {
	st, err := n.kv.Status(ctx)
	if err != nil {
		return time.Time{}, err
	}
	now := st.(*jetstream.KeyValueBucketStatus).StreamInfo().TimeStamp
	if now.IsZero() {
		return time.Time{}, errors.New("the NATS server does not say its time (stream info without \"ts\"): use nats-server 2.10 or later")
	}
	return now, nil
}

// Watch calls each with every node's latest heartbeat, as the bucket holds them now
// and as they change (nil: the node's entry is gone), on a goroutine that ends with ctx
// and then calls done (when set). An entry that is not a heartbeat is left out.
func (n *Nodes) Watch(ctx context.Context, each func(node string, info *wire.NodeInfo), done func()) error {
	err := watchBucket(ctx, n.kv, func(e jetstream.KeyValueEntry) {
		if e.Operation() != jetstream.KeyValuePut {
			each(e.Key(), nil)
			return
		}
		var info wire.NodeInfo
		if json.Unmarshal(e.Value(), &info) == nil {
			info.Stored = e.Created()
			each(e.Key(), &info)
		}
	}, done)
	if err != nil {
		return fmt.Errorf("store: watch nodes: %w", err)
	}
	return nil
}
