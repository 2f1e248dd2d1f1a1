package node

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/agentmux/agentmux/actors/router"
	"github.com/agentmux/agentmux/metrics"
	"github.com/agentmux/agentmux/wire"
)

const (
	heartbeatTimeout = 2 * time.Second
	// nameClaimWait is how long a starting node waits for another heartbeat under its
	// name before it takes the name: two heartbeats' time and a margin.
	nameClaimWait = 2*wire.HeartbeatInterval + time.Second
)

// pulse is how a node is seen alive: its heartbeat loop, with what its last beat saw,
// and its metrics server.
type pulse struct {
	metrics  *metrics.Server    // /metrics and the health checks; nil when disabled
	stop     context.CancelFunc // stops the loop
	done     chan struct{}      // closed when the loop has ended
	draining atomic.Bool        // as of the last heartbeat: /readyz says so
	listed   atomic.Bool        // a heartbeat of this run is in the nodes bucket: /readyz waits for it
}

// startHeartbeat writes this node's NodeInfo into the nodes bucket now and every
// wire.HeartbeatInterval, so `agentmux nodes` lists it and its absence is noticed.
func (n *Node) startHeartbeat(ctx context.Context) error {
	if err := n.beat(ctx, false); err != nil {
		// A bucket just placed in a forming cluster may take a moment: the loop writes
		// again in HeartbeatInterval.
		n.log.Warn("first heartbeat not written; trying again", "err", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.pulse.stop, n.pulse.done = cancel, make(chan struct{})
	beating := n.engine.routines.Go(func(context.Context) {
		defer close(n.pulse.done)
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
	})
	if !beating { // the node is stopping
		close(n.pulse.done)
	}
	return nil
}

// claimName makes sure no other live node has this node's name: two nodes of one name
// would answer each other's control requests and overwrite each other's heartbeat. A
// fresh heartbeat under the name may be this node's own before a restart (killed, it
// wrote no last one): the claim waits for the next heartbeat it would write, and takes
// the name when none comes.
func (n *Node) claimName(ctx context.Context) error {
	info, rev, serverNow, err := n.asking.nodes.Get(ctx, n.Name)
	if err != nil {
		n.log.Warn("could not check that no live node has this name", "node", n.Name, "err", err)
		return nil
	}
	if info == nil || !info.Alive(serverNow) {
		return nil
	}
	n.log.Info("a node of this name beat lately: waiting to see whether it still runs", "node", n.Name, "started", info.Started, "version", info.Version)
	deadline := time.Now().Add(nameClaimWait)
	poll := time.NewTicker(wire.HeartbeatInterval / 4)
	defer poll.Stop()
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-poll.C:
		}
		now, newRev, _, err := n.asking.nodes.Get(ctx, n.Name)
		if err != nil || now == nil || newRev == rev {
			continue
		}
		if now.Stopped {
			return nil
		}
		return fmt.Errorf("node: another node named %q is running (started %s, version %s, heartbeat just now): give this one another --name, or stop that one first",
			n.Name, now.Started.Format(time.RFC3339), now.Version)
	}
	n.log.Info("the node of this name before is gone; this one takes its place", "node", n.Name)
	return nil
}

// stopHeartbeat ends the loop and writes a last heartbeat that says the node stopped.
func (n *Node) stopHeartbeat() {
	if n.pulse.stop == nil {
		return
	}
	n.pulse.stop()
	<-n.pulse.done
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
		res, err := n.engine.system.Root.RequestFuture(n.sessions.router, &router.StatsRequest{}, heartbeatTimeout).Result()
		if st, ok := res.(*router.Stats); err == nil && ok {
			info.Hosts, info.Draining = st.Hosts, st.Draining
			n.pulse.draining.Store(st.Draining)
		}
		for _, h := range info.Hosts {
			info.Sessions += h.Busy + h.Queued
		}
	}
	ctx, cancel := context.WithTimeout(ctx, heartbeatTimeout)
	defer cancel()
	if err := n.asking.nodes.Put(ctx, info); err != nil {
		return err
	}
	n.pulse.listed.Store(!stopped)
	return nil
}

// Info is this node's NodeInfo, without the live figures of its hosts.
func (n *Node) Info() *wire.NodeInfo {
	info := &wire.NodeInfo{Name: n.Name, Version: metrics.Version(), Started: n.conf.started.Add(n.conf.clockOffset), Heartbeat: time.Now().Add(n.conf.clockOffset), Hosts: []wire.HostInfo{}, Supervisors: []string{}}
	if n.sessions.daily != nil {
		info.DailyUSD = n.sessions.daily.Limit()
	}
	for _, s := range n.served().supervisors {
		info.Supervisors = append(info.Supervisors, s.Name)
	}
	return info
}
