package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// exportTimeout bounds reading a checkpoint's part for an export.
const exportTimeout = time.Minute

// openCheckpoints opens the fleet's checkpoints, which this node's sessions write, and
// serves their export to operators: every node answers (queue group
// agentmux-checkpoints), for the parts are read only through a node.
func (n *Node) openCheckpoints() error {
	ctx, cancel := context.WithTimeout(context.Background(), ctlTimeout)
	defer cancel()
	m := n.conf.opts.Manifest
	st, err := openDeclared(ctx, func() (*store.Checkpoints, error) { return store.OpenCheckpoints(ctx, n.Bus.JS, m.Checkpoints.Keep) })
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	n.sessions.checkpoints = st
	sub, err := n.Bus.Conn.QueueSubscribe(wire.CheckpointExportSubject, "agentmux-checkpoints", func(msg *nats.Msg) {
		if err := bus.CheckRequest(msg, wire.CheckpointExportSubject); err != nil || !strings.HasPrefix(msg.Reply, "_INBOX") {
			n.log.Warn("checkpoint export refused: not a request with an inbox to answer", "reply", msg.Reply, "err", err)
			return
		}
		if !n.engine.routines.Go(func(ctx context.Context) { n.exportCheckpoint(ctx, msg) }) {
			n.sendChunk(msg.Reply, &wire.CheckpointChunk{Error: "the node is stopping; export again"})
		}
	})
	if err != nil {
		return fmt.Errorf("node: serve %s: %w", wire.CheckpointExportSubject, err)
	}
	n.control.subs = append(n.control.subs, sub)
	return nil
}

// exportCheckpoint sends the part an operator asked for to its inbox, in chunks a
// message of the server's holds, then its SHA-256 and the checkpoint it is of.
func (n *Node) exportCheckpoint(ctx context.Context, msg *nats.Msg) {
	ctx, cancel := context.WithTimeout(ctx, exportTimeout)
	defer cancel()
	var req wire.CheckpointExport
	if err := json.Unmarshal(msg.Data, &req); err != nil || req.Session == "" || req.Part == "" {
		n.sendChunk(msg.Reply, &wire.CheckpointChunk{Error: `want {"session","seq","part"}: ` + fmt.Sprint(err)})
		return
	}
	c, err := n.sessions.checkpoints.Find(ctx, req.Session, req.Seq)
	var data []byte
	if err == nil {
		data, err = n.sessions.checkpoints.Part(ctx, c, req.Part)
	}
	if err != nil {
		if !errors.Is(err, store.ErrNoCheckpoint) {
			n.log.Warn("checkpoint export failed", "session", req.Session, "seq", req.Seq, "part", req.Part, "err", err)
		}
		n.sendChunk(msg.Reply, &wire.CheckpointChunk{Error: err.Error()})
		return
	}
	size := max((bus.BodyLimit(n.Bus.Conn)-1024)*3/4, 1024) // base64 in JSON
	i := 0
	for ; len(data) > 0; i++ {
		k := min(size, len(data))
		if !n.sendChunk(msg.Reply, &wire.CheckpointChunk{N: i, Data: data[:k]}) {
			return
		}
		data = data[k:]
	}
	sum := ""
	for _, p := range c.Parts {
		if p.Name == req.Part {
			sum = p.SHA256
		}
	}
	n.sendChunk(msg.Reply, &wire.CheckpointChunk{N: i, Done: true, SHA256: sum, Checkpoint: c})
	n.log.Info("checkpoint exported", "session", c.Session, "seq", c.Seq, "part", req.Part)
}

func (n *Node) sendChunk(to string, c *wire.CheckpointChunk) bool {
	data, _ := json.Marshal(c)
	if err := n.Bus.Conn.Publish(to, data); err != nil {
		n.log.Warn("checkpoint export not sent", "err", err)
		return false
	}
	return true
}
