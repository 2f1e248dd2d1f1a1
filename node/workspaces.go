package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/internal/procenv"
	"github.com/agentmux/agentmux/workspace"
)

// reclaimTimeout bounds the removal, at start, of what a node that died left in one
// host's workspaces.
const reclaimTimeout = 2 * time.Minute

// workspaceDir is where the node keeps h's workspaces: <workspace_dir>/<node>/<host>,
// workspace_dir defaulting to $XDG_DATA_HOME/agentmux/workspaces.
func (n *Node) workspaceDir(h *config.Host) (string, error) {
	dir := h.Workspace.Dir
	if dir == "" {
		getenv := getenv(n.conf.opts)
		data := getenv("XDG_DATA_HOME")
		if data == "" {
			home := getenv("HOME")
			if home == "" {
				var err error
				if home, err = os.UserHomeDir(); err != nil {
					return "", fmt.Errorf("node: hosts.%s: no directory for its workspaces: set workspace_dir (or HOME)", h.Name)
				}
			}
			data = filepath.Join(home, ".local", "share")
		}
		dir = filepath.Join(data, "agentmux", "workspaces")
	}
	return filepath.Join(dir, n.Name, h.Name), nil
}

// workspaces are the hosts' workspace roots, by directory, what opens and closes them,
// by host, as of the last reload, and the conflict radar (nil without hosts with
// workspaces: radar.go).
type workspaces struct {
	roots     map[string]*workspace.Root
	providers atomic.Pointer[map[string]*workspace.Provider]
	radar     *workspace.Radar
}

// openWorkspaces opens the workspace root of each of hosts that gives its sessions
// workspaces of their own, once per directory: a reload keeps the roots.
func (n *Node) openWorkspaces(hosts map[string]*config.Host) error {
	if n.workspaces.roots == nil {
		n.workspaces.roots = map[string]*workspace.Root{}
	}
	for name, h := range hosts {
		if !h.Workspace.Isolated() {
			continue
		}
		dir, err := n.workspaceDir(h)
		if err != nil {
			return err
		}
		if n.workspaces.roots[dir] != nil {
			continue
		}
		root, err := workspace.OpenRoot(dir, n.log.With("host", name))
		if err != nil {
			return fmt.Errorf("node: hosts.%s: %w", name, err)
		}
		n.workspaces.roots[dir] = root
	}
	return nil
}

// workspaceWrite is what a host's agents may write besides their own state: the
// workspaces' tree (not its working_dir, which is the repository they must not write),
// and a push target on this machine, which the push writes as they would.
func (n *Node) workspaceWrite(h *config.Host) []string {
	if !h.Workspace.Isolated() {
		return nil
	}
	dir, err := n.workspaceDir(h)
	root := n.workspaces.roots[dir]
	if err != nil || root == nil {
		return nil
	}
	out := []string{root.Work()}
	if w := h.Workspace; w.Push != "" && !config.IsURL(w.Push) && w.Push != "origin" {
		out = append(out, w.Push)
	}
	return out
}

// workspaceProviders makes, for each host with workspaces, what opens and closes them:
// its git commands start in the host's sandbox, with its agents' environment. The
// node's workspace requests are answered with them from now on.
func (n *Node) workspaceProviders() map[string]*workspace.Provider {
	out := map[string]*workspace.Provider{}
	defer n.workspaces.providers.Store(&out)
	for name, h := range n.conf.roles.hosts {
		dir, err := n.workspaceDir(h)
		root := n.workspaces.roots[dir]
		if !h.Workspace.Isolated() || err != nil || root == nil {
			continue
		}
		p := root.Provider(name, h.Workspace, procenv.Build(h.InheritEnv, h.Env), n.sandboxes.set["hosts."+name].Start)
		if push := n.sandboxes.set["push."+name]; push != nil {
			p.PushWith(push.Start)
		}
		out[name] = p
	}
	return out
}

// reclaimWorkspaces removes what a node of this name that died left in its hosts'
// workspaces, before any session runs.
func (n *Node) reclaimWorkspaces(ctx context.Context) error {
	for name, p := range n.workspaceProviders() {
		ctx, cancel := context.WithTimeout(ctx, reclaimTimeout)
		removed, err := p.Reclaim(ctx)
		cancel()
		if err != nil {
			return fmt.Errorf("node: hosts.%s: %w", name, err)
		}
		if len(removed) > 0 {
			n.log.Warn("removed the workspaces of sessions an earlier node left running; their tasks run again from a fresh workspace", "host", name, "workspaces", removed)
		}
	}
	return nil
}
