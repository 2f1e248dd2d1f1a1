package node

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/agentmux/agentmux/actors/router"
	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/internal/sandbox"
	"github.com/agentmux/agentmux/notify"
)

// Reload runs m in place of the node's manifest, without a restart (`up` on SIGHUP):
//
//   - routes: every request asked from now on, in running sessions too;
//   - supervisors, their rules, connections and tools: new members take over the queue
//     groups, then the old ones stop, handing back the asks they held (the askers give
//     them to the new members at once; requests waiting for a person stay waiting);
//   - notify: new notifiers start, then the old ones stop;
//   - hosts: each changed host's next sessions run on processes started from its new
//     table (its idle processes stop now, its busy ones when their session ends).
//
// What a node cannot change while it runs — [nats], [metrics], [audit], which hosts there are,
// a host's pool, pipelines — is refused, and so is a manifest whose sandboxes or
// supervisors cannot start: the error says what, and the manifest before runs on.
func (n *Node) Reload(ctx context.Context, m *config.Manifest) error {
	n.conf.reloads.mu.Lock()
	defer n.conf.reloads.mu.Unlock()
	return n.counted(n.reload(ctx, m))
}

// reloads orders reloads: mu is held by each; closed, under it, once the node stops
// what a reload replaces.
type reloads struct {
	mu     sync.Mutex
	closed bool
}

// errStopping refuses a reload of a node that is stopping.
var errStopping = errors.New("node: stopping: the manifest is not reloaded")

// ReloadManifest reads the node's manifest file again and reloads it (Reload); a
// manifest that does not load is refused with its errors, and the one before runs on.
func (n *Node) ReloadManifest(ctx context.Context) error {
	n.conf.reloads.mu.Lock()
	defer n.conf.reloads.mu.Unlock()
	return n.reloadManifest(ctx)
}

// reloadManifest is ReloadManifest under the reload's lock.
func (n *Node) reloadManifest(ctx context.Context) error {
	m, err := config.Load(n.conf.opts.Manifest.Path)
	if err != nil {
		return n.counted(fmt.Errorf("node: manifest not reloaded, the one before runs on: %w", err))
	}
	for _, w := range m.Warnings {
		n.log.Warn("manifest", "problem", w.Error())
	}
	return n.counted(n.reload(ctx, m))
}

// counted counts a reload by its outcome, err, and returns err.
func (n *Node) counted(err error) error {
	outcome, ok := "ok", 1.0
	if err != nil {
		outcome, ok = "refused", 0
	}
	n.Metrics.ManifestReloads.WithLabelValues(outcome).Inc()
	n.Metrics.ManifestReloadedOK.Set(ok)
	return err
}

func (n *Node) reload(ctx context.Context, m *config.Manifest) error {
	if n.conf.reloads.closed {
		return errStopping
	}
	if restart := needsRestart(n.conf.opts.Manifest, m); len(restart) > 0 {
		return fmt.Errorf("node: manifest not reloaded, the one before runs on: these changes need a restart: %s", strings.Join(restart, "; "))
	}
	opts := n.conf.opts
	opts.Manifest = m
	roles, err := chooseRoles(opts)
	if err != nil {
		return fmt.Errorf("node: manifest not reloaded: %w", err)
	}
	oldRoles, oldSandboxes, oldSups, oldNotifiers := n.conf.roles, n.sandboxes.set, n.deciders.supervisors, n.deciders.notifiers
	undo := func() {
		for _, pid := range n.deciders.supervisors {
			n.stopSupervisor(pid)
		}
		n.stopNotifiers()
		n.sandboxes.set.Close()
		n.setRoles(oldRoles)
		n.sandboxes.set, n.deciders.supervisors, n.deciders.notifiers = oldSandboxes, oldSups, oldNotifiers
	}
	if err := n.openWorkspaces(roles.hosts); err != nil {
		return fmt.Errorf("node: manifest not reloaded: %w", err)
	}
	n.setRoles(roles)
	n.deciders.supervisors, n.deciders.notifiers = nil, nil
	if err := n.startSandboxes(opts); err != nil {
		n.sandboxes.set = sandbox.Set{}
		undo()
		return fmt.Errorf("node: manifest not reloaded: %w", err)
	}
	if err := n.startNotifiers(opts); err != nil {
		undo()
		return fmt.Errorf("node: manifest not reloaded: %w", err)
	}
	if err := n.startSupervisors(ctx, m); err != nil {
		undo()
		return fmt.Errorf("node: manifest not reloaded: %w", err)
	}
	if n.workspaces.radar == nil {
		if err := n.watchConflicts(); err != nil {
			n.log.Warn("the conflict radar did not start; sessions in workspaces are not told of each other", "err", err)
		}
	}
	// The new members are subscribed: the old ones may let go.
	n.engine.system.Root.Send(n.sessions.router, &router.Reload{Manifest: m, Hosts: roles.hosts, Sandboxes: n.sandboxes.set, Workspaces: n.workspaceProviders(), Radar: n.workspaces.radar})
	for _, pid := range oldSups {
		n.stopSupervisor(pid)
	}
	stopAll(oldNotifiers)
	// Agents started before the reload keep their sandboxes until they exit; the sets
	// are closed when the node stops.
	n.sandboxes.retired = append(n.sandboxes.retired, oldSandboxes)
	n.conf.opts = opts
	if n.sessions.daily != nil {
		n.sessions.daily.SetLimit(dailyUSD(m))
	}
	for _, name := range slices.Sorted(maps.Keys(n.promotedNow())) {
		if len(m.Shadowing(name)) == 0 {
			n.log.Warn("shadow promoted fleet-wide, but no route of the reloaded manifest shadows it: it decides nothing here (agentmux policy demote "+name+" ends it)", "shadow", name)
		}
	}
	n.log.Info("manifest reloaded", "path", m.Path, "hosts", len(roles.hosts), "supervisors", len(roles.supervisors), "routes", len(m.Routes), "notify", len(m.Notify))
	return nil
}

func (n *Node) stopSupervisor(pid *actor.PID) {
	if err := n.engine.system.Root.StopFuture(pid).Wait(); err != nil {
		n.log.Warn("supervisor stop", "err", err)
	}
}

func stopAll(notifiers []*notify.Notifier) {
	for _, x := range notifiers {
		x.Stop()
	}
}

// needsRestart lists what differs between a running manifest and a new one that a
// node cannot change in place.
func needsRestart(old, m *config.Manifest) []string {
	var out []string
	if !reflect.DeepEqual(old.NATS, m.NATS) {
		out = append(out, "[nats] changed (the bus and its users are set up at start)")
	}
	if !reflect.DeepEqual(old.Metrics, m.Metrics) {
		out = append(out, "[metrics] changed (its listener is opened at start)")
	}
	if old.Audit != m.Audit {
		out = append(out, "[audit] changed (a node sets the audit stream's limits as it starts)")
	}
	added, removed := diffKeys(old.Hosts, m.Hosts)
	if len(added) > 0 {
		out = append(out, "hosts added: "+strings.Join(added, ", ")+" (a host's task queue is joined at start)")
	}
	if len(removed) > 0 {
		out = append(out, "hosts removed: "+strings.Join(removed, ", ")+" (their queued tasks would wait for no node)")
	}
	for _, name := range slices.Sorted(maps.Keys(m.Hosts)) {
		if h := old.Hosts[name]; h != nil && h.Pool != m.Hosts[name].Pool {
			out = append(out, fmt.Sprintf("hosts.%s.pool %d → %d (the task puller's slots are made at start)", name, h.Pool, m.Hosts[name].Pool))
		}
	}
	if !reflect.DeepEqual(old.Pipelines, m.Pipelines) {
		out = append(out, "[pipelines] changed (their run queues are joined at start)")
	}
	if gatewayChanged(old, m) {
		out = append(out, "a host's model, a connection one names, or [gateway] record changed (the model gateway reads them, and their keys, at start)")
	}
	return out
}

func diffKeys[V any](old, m map[string]V) (added, removed []string) {
	for k := range m {
		if _, ok := old[k]; !ok {
			added = append(added, k)
		}
	}
	for k := range old {
		if _, ok := m[k]; !ok {
			removed = append(removed, k)
		}
	}
	slices.Sort(added)
	slices.Sort(removed)
	return added, removed
}
