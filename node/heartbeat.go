package node

import (
	"context"
	"time"

	"github.com/agentmux/agentmux/actors/router"
	"github.com/agentmux/agentmux/metrics"
	"github.com/agentmux/agentmux/wire"
)

const heartbeatTimeout = 2 * time.Second

// startHeartbeat writes this node's NodeInfo into the nodes bucket now and every
// wire.HeartbeatInterval, so `agentmux nodes` lists it and its absence is noticed.
func (n *Node) startHeartbeat(ctx context.Context) error {
	if err := n.beat(ctx, false); err != nil {
		// A bucket just placed in a forming cluster may take a moment: the loop writes
		// again in HeartbeatInterval.
		n.log.Warn("first heartbeat not written; trying again", "err", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.heartbeat, n.beatDone = cancel, make(chan struct{})
	go func() {
		defer close(n.beatDone)
		t := time.NewTicker(wire.HeartbeatInterval)
		defer t.Stop()
		for beats := 0; ; beats++ {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := n.beat(ctx, false); err != nil && ctx.Err() == nil {
					n.log.Warn("heartbeat not written", "err", err)
				}
				if beats%sweepEvery == 0 {
					n.sweepOrphans(ctx)
				}
			}
		}
	}()
	return nil
}

// stopHeartbeat ends the loop and writes a last heartbeat that says the node stopped.
func (n *Node) stopHeartbeat() {
	if n.heartbeat == nil {
		return
	}
	n.heartbeat()
	<-n.beatDone
	ctx, cancel := context.WithTimeout(context.Background(), heartbeatTimeout)
	defer cancel()
	if err := n.beat(ctx, true); err != nil {
		n.log.Warn("last heartbeat not written", "err", err)
	}
}

// beat writes one heartbeat.
func (n *Node) beat(ctx context.Context, stopped bool) error {
	info := n.Info()
	info.Stopped = stopped
	if !stopped {
		res, err := n.system.Root.RequestFuture(n.router, &router.StatsRequest{}, heartbeatTimeout).Result()
		if st, ok := res.(*router.Stats); err == nil && ok {
			info.Hosts, info.Draining = st.Hosts, st.Draining
			n.draining.Store(st.Draining)
		}
		for _, h := range info.Hosts {
			info.Sessions += h.Busy + h.Queued
		}
	}
	ctx, cancel := context.WithTimeout(ctx, heartbeatTimeout)
	defer cancel()
	return n.nodes.Put(ctx, info)
}

// Info is this node's NodeInfo, without the live figures of its hosts.
func (n *Node) Info() *wire.NodeInfo {
	info := &wire.NodeInfo{Name: n.Name, Version: metrics.Version(), Started: n.started.Add(n.clockOffset), Heartbeat: time.Now().Add(n.clockOffset), Hosts: []wire.HostInfo{}, Supervisors: []string{}}
	for _, s := range n.served().supervisors {
		info.Supervisors = append(info.Supervisors, s.Name)
	}
	return info
}
