package node

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/dialect"
	"github.com/agentmux/agentmux/internal/sandbox"
	"github.com/agentmux/agentmux/internal/shim"
)

// program is one program this node may start, with its host's dialect ("" for
// command supervisors and tools) and the directories it works in, when they are not its
// working_dir (a host's workspaces).
type program struct {
	*config.Process
	dialect string
	workIn  []string
}

// programs are what this node may start, by manifest table: its hosts' agents (but
// those run inside the node: attached, or Options.InProc), its command supervisors, and
// the tools its supervisors may call.
func (n *Node) programs(opts Options) map[string]program {
	m := opts.Manifest
	out := map[string]program{}
	for name, h := range n.conf.roles.hosts {
		if h.Attached != nil || opts.InProc[name] != nil {
			continue // runs in the node
		}
		out["hosts."+name] = program{Process: &h.Process, dialect: h.Dialect, workIn: n.workspaceWrite(h)}
	}
	for _, s := range n.conf.roles.supervisors {
		if s.Strategy == config.StrategyCommand {
			out["supervisors."+s.Name] = program{Process: &s.Process}
		}
	}
	if len(n.conf.roles.supervisors) > 0 {
		for name, t := range m.Tools {
			if t.Command != "" {
				out["tools."+name] = program{Process: &t.Process}
			}
		}
	}
	return out
}

// confinement is what holds the programs the node starts: the registry of their
// process groups, their sandboxes by manifest table;
// those reloads replaced, which agents started before may still use, closed when the
// node stops; and what takes back the ports this node told the machine's sandboxes of.
type confinement struct {
	procs      *shim.Registry // the process groups started, in the store
	set        sandbox.Set
	retired    []sandbox.Set
	unannounce []func()
}

// closeSandboxes closes the node's sandboxes, and those its reloads replaced.
func (n *Node) closeSandboxes() {
	n.sandboxes.set.Close()
	for _, set := range n.sandboxes.retired {
		set.Close()
	}
}

// startSandboxes makes the sandbox of each program this node may start, built when
// first used: Landlock on Linux, Seatbelt on macOS. A program without one runs
// unsandboxed: sandbox = "none", or a system without either, which is warned about; a
// program that asks for landlock where there is none stops the node.
func (n *Node) startSandboxes(opts Options) error {
	m := opts.Manifest
	abi, mechanism := sandbox.ABI(), sandbox.Mechanism()
	base := n.sandboxBase(opts)
	set := sandbox.Set{}
	var unsandboxed, rootless []string
	for key, p := range n.programs(opts) {
		switch {
		case os.Geteuid() == 0 && p.dialect != "" && p.User == "":
			return rootAgent(key)
		case p.Sandbox == config.SandboxNone:
			if os.Geteuid() == 0 {
				n.log.Warn("this program runs as root, unsandboxed (sandbox = \"none\"): it can read the node's environment, memory and credentials; sandbox it and give it a user (docs/security.md)", "program", key)
			}
			continue
		case abi < 1 && p.Sandbox == config.SandboxLandlock && mechanism != "seatbelt":
			return fmt.Errorf("node: %s: sandbox = %q, and this system has no Landlock (Linux 5.13 or later, with landlock in the lsm= boot parameter); set sandbox = %q to run it unsandboxed", key, config.SandboxLandlock, config.SandboxNone)
		case mechanism == "":
			unsandboxed = append(unsandboxed, key)
			continue
		}
		policy := programPolicy(base, p.Process, p.workIn)
		if err := n.runAs(key, p, &policy); err != nil {
			return err
		}
		if policy.As == nil && p.User == "" && os.Geteuid() == 0 && mechanism == "landlock" {
			rootless = append(rootless, key)
		}
		if p.dialect != "" {
			policy.Write = append(policy.Write, n.agentState(key, p.dialect, p.Process, policy.As)...)
		}
		n.guardPolicyFiles(key, m, &policy)
		set[key] = sandbox.New(key, policy)
		if dir := n.pushGitDir(key); dir != "" {
			// The push to the repository itself, and the receive-pack it starts, write
			// the repository's git directory, which the agents may not: a sandbox of
			// their own, the host's and that directory.
			push := policy
			push.Write = append(slices.Clone(policy.Write), dir)
			set["push."+strings.TrimPrefix(key, "hosts.")] = sandbox.New("push."+strings.TrimPrefix(key, "hosts."), push)
		}
	}
	n.sandboxes.set = set
	if len(rootless) > 0 {
		slices.Sort(rootless)
		n.log.Warn("the node runs as root: these programs run as root without any capability (they read what root owns, not what only root's capabilities reach); give each a user of its own to run it as an unprivileged user (docs/security.md)",
			"programs", strings.Join(rootless, ", "))
	}
	if len(unsandboxed) > 0 {
		n.log.Warn("this system has neither Landlock nor Seatbelt: these programs run unsandboxed, able to read the node's credentials and reach its ports; set sandbox = \"none\" to say so, or run the node on Linux 5.13 or later, or macOS",
			"programs", strings.Join(unsandboxed, ", "))
	}
	if len(set) > 0 {
		n.sandboxesReady(mechanism, abi, base)
	}
	return nil
}

// guardPolicyFiles denies key's program writing the manifest and the rules files,
// which decide what it is allowed, and warns where its policy cannot.
func (n *Node) guardPolicyFiles(key string, m *config.Manifest, policy *sandbox.Policy) {
	for _, path := range n.policyFiles(m) {
		if w := sandbox.Within(path, policy.Write); w != "" {
			n.log.Warn("a sandboxed program may write the manifest or a rules file, which decide what it is allowed: keep them outside the program's working_dir and sandbox_write",
				"program", key, "file", path, "writable", w)
		} else {
			policy.WriteDeny = append(policy.WriteDeny, path)
		}
	}
	for _, c := range policy.Carved() {
		n.log.Warn("a sandboxed program's writable directory holds what it may not touch: it writes the directory's other entries but creates none directly in it; keep the node's files out of the directories programs write",
			"program", key, "writable", c[0], "holds", c[1])
	}
}

// sandboxesReady removes what sandboxes of nodes killed with SIGKILL left (their
// temporary directories: the first node to start after one does), and says what this
// kernel's Landlock cannot refuse.
func (n *Node) sandboxesReady(mechanism string, abi int, base sandbox.Policy) {
	if removed, err := sandbox.SweepStale(""); err != nil {
		n.log.Warn("the temporary directories of nodes no longer running were not looked for", "err", err)
	} else if len(removed) > 0 {
		n.log.Info("removed the temporary directories of nodes no longer running", "count", len(removed))
	}
	switch {
	case mechanism != "landlock":
	case abi < 4:
		n.log.Warn("Landlock ABI "+strconv.Itoa(abi)+" cannot refuse TCP connections (ABI 4, Linux 6.7): sandboxed programs may connect to the node's ports", "denied_ports", base.ConnectDeny)
	case abi < 6:
		n.log.Warn("Landlock ABI " + strconv.Itoa(abi) + " cannot scope signals (ABI 6, Linux 6.12): sandboxed programs may signal the node")
	}
}

// sandboxBase is what no program of this node may do: read its state directory, its
// store, its credential and key files; connect to its bus, cluster, metrics and
// console ports. (Writing the manifest is denied per program, where it can be.)
func (n *Node) sandboxBase(opts Options) sandbox.Policy {
	m, getenv := opts.Manifest, getenv(opts)
	var p sandbox.Policy
	deny := func(path string) {
		if path != "" {
			p.ReadDeny = append(p.ReadDeny, path)
		}
	}
	deny(opts.StateDir)
	if m.NATS.StoreDir != config.MemoryStore {
		deny(m.NATS.StoreDir)
	}
	deny(m.NATS.Credentials)
	deny(m.NATS.NkeySeedFile)
	deny(getenv(config.EnvNATSCreds))
	if t := m.NATS.TLS; t != nil {
		deny(t.Key)
		deny(t.ClientKey)
	}
	if srv := n.Bus.Server(); srv != nil {
		deny(srv.JetStreamConfig().StoreDir)
	}
	for _, a := range append([]string{config.DefaultConsoleAddr, m.NATS.URL}, n.listening()...) {
		if port, ok := portOf(a); ok {
			p.ConnectDeny = append(p.ConnectDeny, port)
		}
	}
	return p
}

// listening is where this node listens: its embedded server's bus and cluster
// addresses, and its metrics'.
func (n *Node) listening() []string {
	var addrs []string
	if srv := n.Bus.Server(); srv != nil {
		addrs = append(addrs, srv.Addr().String())
		if a := srv.ClusterAddr(); a != nil {
			addrs = append(addrs, a.String())
		}
	}
	if n.pulse.metrics != nil {
		addrs = append(addrs, n.pulse.metrics.Addr())
	}
	return addrs
}

// announcePorts tells the sandboxes of this machine, whatever node or user runs them,
// the ports this node listens on: its bus, cluster and metrics ports.
func (n *Node) announcePorts() {
	for _, a := range n.listening() {
		port, ok := portOf(a)
		if !ok {
			continue
		}
		release, err := sandbox.Announce(port)
		if err != nil {
			n.log.Warn("the programs other nodes of this machine start may connect to this port", "port", port, "err", err)
			continue
		}
		n.sandboxes.unannounce = append(n.sandboxes.unannounce, release)
	}
}

func (n *Node) unannouncePorts() {
	for _, release := range n.sandboxes.unannounce {
		release()
	}
	n.sandboxes.unannounce = nil
}

// pushGitDir is the git directory a host's workspaces push to when program key is a
// host whose push is "origin" on this machine: the repository's .git, or the
// repository itself when it is bare; "" otherwise (a URL: the network's to guard).
func (n *Node) pushGitDir(key string) string {
	name, ok := strings.CutPrefix(key, "hosts.")
	h := n.conf.roles.hosts[name]
	if !ok || h == nil || !h.Workspace.Isolated() || h.Workspace.Push != "origin" || config.IsURL(h.Workspace.Repo) {
		return ""
	}
	repo := h.Workspace.Repo
	if st, err := os.Stat(filepath.Join(repo, ".git")); err == nil && st.IsDir() {
		return filepath.Join(repo, ".git")
	}
	if _, err := os.Stat(filepath.Join(repo, "objects")); err == nil {
		return repo // bare
	}
	return "" // a .git file (a worktree, a submodule): pushed in the host's sandbox
}

// programPolicy is base with what p may do besides: write where it works (workIn, or
// else its working directory, the node's when it names none), its sandbox_write paths,
// and a temporary directory of its own unless its env names one, which it may write
// instead.
func programPolicy(base sandbox.Policy, p *config.Process, workIn []string) sandbox.Policy {
	out := base
	if len(workIn) == 0 {
		dir := p.WorkingDir
		if dir == "" {
			dir, _ = os.Getwd()
		}
		workIn = []string{dir}
	}
	out.Write = append(slices.Clone(workIn), p.SandboxWrite...)
	out.ReadDeny = append(append([]string(nil), base.ReadDeny...), p.SandboxReadDeny...)
	if tmp := p.Env["TMPDIR"]; tmp != "" {
		out.Write = append(out.Write, tmp)
	} else {
		out.Temp = true
	}
	return out
}

// agentState is what the agent CLI of dialect d keeps its own state in, which it
// writes (dialect.StateOf): the directories, made if missing (but those guessed for an
// ACP agent not known by its command), and the files that exist. Claude Code with no CLAUDE_CONFIG_DIR
// keeps ~/.claude.json in the home, where the sandbox lets it rewrite the file only in
// place: sessions at once can leave it torn, which is warned about.
func (n *Node) agentState(key, d string, p *config.Process, as *sandbox.User) []string {
	getenv := func(name string) string {
		if v, ok := p.Env[name]; ok {
			return v
		}
		if slices.Contains(p.InheritEnv, name) || name == "HOME" {
			return os.Getenv(name)
		}
		return ""
	}
	st := dialect.StateOf(d, p.Command, getenv, getenv("HOME"))
	var out []string
	for _, dir := range st.Dirs {
		if _, err := os.Stat(dir); err != nil && !st.Guessed {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				n.log.Warn("the agent's own state directory cannot be made: it will not start in its sandbox", "program", key, "dir", dir, "err", err)
			} else if as != nil {
				if err := os.Chown(dir, int(as.Uid), int(as.Gid)); err != nil {
					n.log.Warn("the agent's own state directory cannot be given to its user", "program", key, "dir", dir, "user", as.Name, "err", err)
				}
			}
		}
		if _, err := os.Stat(dir); err == nil {
			out = append(out, dir)
		}
	}
	for _, f := range st.Files {
		if _, err := os.Stat(f); err == nil {
			out = append(out, f)
		}
	}
	if len(st.Files) > 0 && d == dialect.ClaudeCode {
		n.log.Warn("Claude Code keeps ~/.claude.json in the home, which its sandbox lets it rewrite only in place: sessions running at once can tear it; set env CLAUDE_CONFIG_DIR to a directory of its own (docs/security.md)",
			"program", key)
	}
	return out
}

// portOf is the port of a host:port or a URL's.
func portOf(addr string) (uint16, bool) {
	if u, err := url.Parse(addr); err == nil && u.Host != "" {
		addr = u.Host
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseUint(port, 10, 16)
	return uint16(v), err == nil && v > 0
}

// policyFiles are the files that say what the node's programs are allowed, which none
// of them may write: the manifest, and the rules file of each rule supervisor the node
// runs (a rule planted there would allow what a person never did).
func (n *Node) policyFiles(m *config.Manifest) []string {
	var out []string
	if m.Path != "" {
		out = append(out, m.Path)
	}
	for _, s := range n.ruled() {
		out = append(out, s.RulesPath)
	}
	return out
}
