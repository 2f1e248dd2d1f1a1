package node

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/agentmux/agentmux/internal/shim"
	"github.com/agentmux/agentmux/wire"
)

// pendingTimeout bounds one withdrawal or sweep of the pending bucket.
const pendingTimeout = 5 * time.Second

// sweepEvery is how many heartbeats apart the pending bucket is swept for orphans (10
// s): a sweep reads every entry.
const sweepEvery = 5

// withdraw cancels the request a person was deciding when its ask is given up on (the
// session ended, the default was written): nobody could receive an answer now, so it
// leaves `agentmux pending`, and `agentmux respond` refuses it saying why. It is the
// Asker's OnWithdrawn and runs on an agent's goroutine, so it only starts the work.
func (n *Node) withdraw(key, why string) {
	pending := n.control.pending.Load()
	if pending == nil {
		return
	}
	n.engine.routines.Go(func(context.Context) {
		ctx, cancel := context.WithTimeout(context.Background(), pendingTimeout)
		defer cancel()
		if _, err := pending.Cancel(ctx, "h-"+key, why); err != nil {
			n.log.Warn("withdraw a request from a person", "request", "h-"+key, "err", err)
		}
	})
}

// sweepOrphans cancels, and audits as cancelled, the requests waiting for a person whose
// asking node is gone (no heartbeat for wire.NodeDeadAfter) or is this node before it
// restarted: their sessions are over, so no answer could reach them.
func (n *Node) sweepOrphans(ctx context.Context) {
	pending := n.control.pending.Load()
	if pending == nil || len(n.served().supervisors) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, pendingTimeout)
	defer cancel()
	list, err := pending.List(ctx)
	if err != nil {
		n.log.Warn("sweep requests waiting for a person", "err", err)
		return
	}
	now := time.Now()
	for _, p := range list {
		var why string
		switch {
		case p.Node == "":
		case p.Node == n.Name && p.Created.Before(n.conf.started):
			why = fmt.Sprintf("orphaned: node %s restarted, and its session with it", p.Node)
		case p.Node != n.Name && n.asking.directory.Gone(p.Node):
			why = fmt.Sprintf("orphaned: node %s is gone (no heartbeat for %v), and its session with it", p.Node, wire.NodeDeadAfter)
		}
		if why == "" {
			continue
		}
		cancelled, err := pending.Cancel(ctx, p.ID, why)
		if err != nil {
			n.log.Warn("cancel an orphaned request", "request", p.ID, "err", err)
			continue
		}
		if cancelled == nil {
			continue // answered meanwhile, or another node cancelled it
		}
		n.log.Info("request waiting for a person cancelled", "request", p.ID, "session", p.Session, "why", why)
		n.audit.record(wire.AuditID(p.Session, p.Attempt, p.ID+".orphaned"), &wire.AuditRecord{Kind: "answer", Time: now.UnixMilli(),
			Node: n.Name, Host: p.Host, Session: p.Session, Attempt: p.Attempt, Request: p.Request, Type: p.Type,
			Outcome: "cancelled", Decider: "runtime", Reason: why})
	}
}

// sweepLeftovers kills the process groups an earlier node on this store started and
// that outlived it (their shim was killed with it), then records this node's. Only a
// node with a store of its own records: an ephemeral one has nothing to come back to.
// Every node runs each program in a cgroup of its own where it may make one; where it
// may not, a process that leaves its group (setsid) can outlive a node killed with
// SIGKILL, which is warned about.
func (n *Node) sweepLeftovers(opts Options) error {
	dir := storeFolder(opts, n.Name)
	if dir != "" {
		dir = filepath.Join(dir, "agentmux-processes")
	}
	procs, err := shim.OpenRegistry(dir)
	if err != nil {
		return err
	}
	if killed := procs.Sweep(); len(killed) > 0 {
		n.log.Warn("killed process groups an earlier node on this store left running", "groups", killed)
	}
	if err := procs.UseCgroups(); err != nil && len(n.programs(opts)) > 0 {
		n.log.Warn("no cgroup per program: a process an agent detaches (setsid) can outlive this node if it is killed with SIGKILL", "err", err)
	}
	n.sandboxes.procs = procs
	return nil
}
