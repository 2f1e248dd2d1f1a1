package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/agentmux/agentmux/actors/agent"
	"github.com/agentmux/agentmux/actors/router"
	"github.com/agentmux/agentmux/attach"
	"github.com/agentmux/agentmux/gateway"
	"github.com/agentmux/agentmux/notify"
	"github.com/agentmux/agentmux/store"
	"github.com/asynkron/protoactor-go/actor"
)

// service is one part of a node. A node starts the services of its table in order,
// and stops those it started in reverse: when it stops, or when a later one fails to
// start. A service keeps what it starts (goroutines through the node's routines,
// subscriptions in control.subs) and its stop ends it.
type service struct {
	name  string
	start func(ctx context.Context) error // nil: nothing to start
	stop  func(ctx context.Context) error // nil: nothing to stop
}

// services is the node's table: each row is started after those above it, whose work
// it may use, and stopped before them.
func (n *Node) services(opts Options) []service {
	return []service{
		{name: "processes", start: func(context.Context) error { return n.sweepLeftovers(opts) },
			stop: func(context.Context) error { n.sandboxes.procs.Close(); return nil }},
		{name: "metrics", start: func(context.Context) error { return n.startMetrics(opts) },
			stop: func(context.Context) error { n.pulse.metrics.Close(); return nil }},
		{name: "bus", start: func(ctx context.Context) error { return n.openBus(ctx, opts) },
			stop: func(context.Context) error { n.Bus.Close(); return nil }},
		{name: "tracing", stop: func(ctx context.Context) error {
			if err := n.conf.opts.Tracing.Shutdown(ctx); err != nil {
				n.log.Warn("the last spans were not exported", "err", err)
			}
			return nil
		}},
		{name: "audit", start: n.startAudit,
			stop: func(context.Context) error { n.audit.close(auditFlushTimeout); return nil }},
		{name: "asker", start: n.startAsker, stop: func(context.Context) error { n.closeAsker(); return nil }},
		{name: "ports", start: func(context.Context) error { n.announcePorts(); return nil },
			stop: func(context.Context) error { n.unannouncePorts(); return nil }},
		{name: "name", start: n.claimName},
		{name: "workspaces", start: func(context.Context) error { return n.openWorkspaces(n.conf.roles.hosts) }},
		{name: "sandboxes", start: func(context.Context) error { return n.startSandboxes(opts) },
			stop: func(context.Context) error { n.closeSandboxes(); return nil }},
		{name: "reclaim", start: n.reclaimWorkspaces},
		{name: "gateway", start: func(context.Context) error { return n.startGateway(opts) }, stop: n.stopGateway},
		{name: "checkpoints", start: func(context.Context) error { return n.openCheckpoints() }},
		{name: "paused", start: func(context.Context) error { return n.openPaused() },
			stop: func(context.Context) error { n.closePaused(); return nil }},
		{name: "radar", start: func(context.Context) error {
			if err := n.watchConflicts(); err != nil {
				return fmt.Errorf("node: the conflict radar: %w", err)
			}
			return nil
		}},
		{name: "actors", start: func(context.Context) error { n.startActorSystem(); return nil },
			stop: func(context.Context) error { n.stopActorSystem(); return nil }},
		// The shadow decisions still to come of ended sessions go before the asker and
		// the audit close.
		{name: "shadows", stop: func(context.Context) error { n.sessions.late.Close(); return nil }},
		{name: "grants", start: func(context.Context) error { return n.openGrants() },
			stop: func(context.Context) error { n.closeGrants(); return nil }},
		{name: "respond", start: n.serveRespond},
		{name: "rules", start: func(context.Context) error { return n.serveRules() }},
		{name: "promotions", start: func(context.Context) error { return n.watchPromotions() },
			stop: func(context.Context) error { n.closePromotions(); return nil }},
		// The actors' goroutines (decisions, keep-alives, task acks, pullers, store
		// I/O) end once the supervisors and the router have stopped.
		{name: "routines", stop: func(ctx context.Context) error { n.stopRoutines(ctx); return nil }},
		{name: "supervisors", start: func(ctx context.Context) error { return n.startSupervisors(ctx, opts.Manifest) },
			stop: func(context.Context) error { n.stopSupervisors(); return nil }},
		{name: "notifiers", start: func(context.Context) error { return n.startNotifiers(opts) },
			stop: func(context.Context) error { n.stopNotifiers(); return nil }},
		{name: "reloads", stop: func(context.Context) error { n.refuseReloads(); return nil }},
		{name: "router", start: func(ctx context.Context) error { return n.startRouter(ctx, opts) }, stop: n.stopRouter},
		{name: "control", start: func(context.Context) error { return n.serveControl() }},
		{name: "heartbeat", start: n.startHeartbeat, stop: func(context.Context) error { n.stopHeartbeat(); return nil }},
	}
}

// sessions is the router's service: the router, the hub of the sessions agentmux did
// not start (nil when the node runs no [attached.X]), the model gateway its agents
// reach their models through (nil when no host does; gateway.go), the sessions'
// checkpoints (checkpoints.go), the daily gate that
// holds hosts' tasks at their budget, the shadow decisions of ended sessions still to
// come, and stopped, closed when a shutdown has ended every session.
type sessions struct {
	router      *actor.PID
	attached    *attach.Hub
	models      *gateway.Gateway
	checkpoints *store.Checkpoints
	daily       *store.DailyGate
	late        *agent.Late
	stopped     chan struct{}
}

// deciders are this node's members of its supervisors, and the notifiers that send
// the manifest's events to their webhooks.
type deciders struct {
	supervisors []*actor.PID
	notifiers   []*notify.Notifier
}

// serviceTable is the node's services, of which the first running are started, and
// Stop's one run, with what it returned.
type serviceTable struct {
	rows     []service
	running  int
	stopping struct {
		once sync.Once
		err  error
	}
}

// startServices starts the node's table in order; when one fails, those started stop
// in reverse and its error is returned.
func (n *Node) startServices(ctx context.Context) error {
	for _, s := range n.table.rows {
		if s.start != nil {
			if err := s.start(ctx); err != nil {
				ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), defaultStopTimeout)
				defer cancel()
				if stopErr := n.stopServices(ctx); stopErr != nil {
					n.log.Warn("a service did not stop cleanly after a failed start", "err", stopErr)
				}
				return err
			}
		}
		n.table.running++
	}
	return nil
}

// stopServices stops the services started, in reverse order.
func (n *Node) stopServices(ctx context.Context) error {
	var errs []error
	for _, s := range slices.Backward(n.table.rows[:n.table.running]) {
		if s.stop != nil {
			errs = append(errs, s.stop(ctx))
		}
	}
	n.table.running = 0
	return errors.Join(errs...)
}

// stopRouter stops the router once its agents have stopped (up to ctx's deadline), and
// the node's subscriptions with it.
func (n *Node) stopRouter(ctx context.Context) error {
	var err error
	if n.sessions.attached != nil {
		n.sessions.attached.Stop()
	}
	n.engine.system.Root.Send(n.sessions.router, &router.Shutdown{Reason: "node stopping"})
	select {
	case <-n.sessions.stopped:
	case <-ctx.Done():
		err = fmt.Errorf("node: agents still running at the stop deadline: %w", ctx.Err())
	}
	for _, s := range n.control.subs {
		_ = s.Unsubscribe() // the connection drains next anyway
	}
	if stopErr := n.engine.system.Root.StopFuture(n.sessions.router).Wait(); stopErr != nil {
		n.log.Warn("router stop", "err", stopErr)
	}
	return err
}

// serveControl answers the node's control subjects: the router's and the workspaces'.
func (n *Node) serveControl() error {
	subs, err := router.ServeControl(n.Bus.Conn, n.engine.system, n.sessions.router, n.Name, n.log)
	n.control.subs = append(n.control.subs, subs...)
	if err == nil {
		err = n.serveWorkspaces()
	}
	if err != nil {
		return fmt.Errorf("node: control subjects: %w", err)
	}
	return nil
}

// refuseReloads waits for a reload in flight and refuses those after: what a reload
// replaces stops next.
func (n *Node) refuseReloads() {
	n.conf.reloads.mu.Lock()
	defer n.conf.reloads.mu.Unlock()
	n.conf.reloads.closed = true
}
