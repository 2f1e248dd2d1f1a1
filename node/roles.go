package node

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/internal/shim"
)

// roles are the hosts and supervisors one node runs out of the fleet's manifest.
type roles struct {
	hosts       map[string]*config.Host
	supervisors []*config.Supervisor // the ones this process decides for (external ones never)
}

// chooseRoles picks this node's share of the manifest from the role options.
func chooseRoles(opts Options) (roles, error) {
	m := opts.Manifest
	r := roles{hosts: map[string]*config.Host{}}
	if opts.NoHosts && len(opts.Hosts) > 0 {
		return r, fmt.Errorf("node: --no-hosts and --hosts %s contradict each other; give one", strings.Join(opts.Hosts, ","))
	}
	if opts.NoSupervisors && len(opts.Supervisors) > 0 {
		return r, fmt.Errorf("node: --no-supervisors and --supervisors %s contradict each other; give one", strings.Join(opts.Supervisors, ","))
	}
	for _, name := range opts.Hosts {
		if m.Hosts[name] == nil {
			return r, fmt.Errorf("node: no host %q in %s; it has %s", name, m.Path, keys(m.Hosts))
		}
	}
	for _, name := range opts.Supervisors {
		switch s := m.Supervisors[name]; {
		case s == nil:
			return r, fmt.Errorf("node: no supervisor %q in %s; it has %s", name, m.Path, keys(m.Supervisors))
		case s.Strategy == config.StrategyExternal:
			return r, fmt.Errorf("node: supervisor %q is external: a process outside agentmux serves it, so no node can", name)
		}
	}
	if !opts.NoHosts {
		for name, h := range m.Hosts {
			if len(opts.Hosts) == 0 || slices.Contains(opts.Hosts, name) {
				r.hosts[name] = h
			}
		}
	}
	if !opts.NoSupervisors {
		for name, s := range m.Supervisors {
			if s.Strategy != config.StrategyExternal && (len(opts.Supervisors) == 0 || slices.Contains(opts.Supervisors, name)) {
				r.supervisors = append(r.supervisors, s)
			}
		}
		slices.SortFunc(r.supervisors, func(a, b *config.Supervisor) int { return strings.Compare(a.Name, b.Name) })
	}
	if r.startsProcesses(m) {
		if err := shim.Check(); err != nil {
			return r, fmt.Errorf("node: %w", err)
		}
	}
	return r, nil
}

// startsProcesses reports whether the node will start processes: agents, command
// supervisors (its own or one it falls back to), or tools its supervisors call.
func (r roles) startsProcesses(m *config.Manifest) bool {
	for _, h := range r.hosts {
		if h.Attached == nil {
			return true
		}
	}
	if len(r.supervisors) > 0 && len(m.Tools) > 0 {
		return true
	}
	for _, s := range r.supervisors {
		for seen := map[string]bool{}; s != nil && !seen[s.Name]; s = m.Supervisors[s.Fallback] {
			seen[s.Name] = true
			if s.Strategy == config.StrategyCommand {
				return true
			}
		}
	}
	return false
}

func keys[T any](m map[string]T) string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// served are the node's roles now, for goroutines other than the one that reloads.
func (n *Node) served() roles {
	n.conf.rolesMu.RLock()
	defer n.conf.rolesMu.RUnlock()
	return n.conf.roles
}

// setRoles replaces the node's roles (a reload).
func (n *Node) setRoles(r roles) {
	n.conf.rolesMu.Lock()
	defer n.conf.rolesMu.Unlock()
	n.conf.roles = r
}

// Hosts are the hosts this node runs, sorted.
func (n *Node) Hosts() []string {
	hosts := n.served().hosts
	out := make([]string, 0, len(hosts))
	for name := range hosts {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}
