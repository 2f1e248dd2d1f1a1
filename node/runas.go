package node

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/internal/sandbox"
)

// runAs sets who program key runs as. A node run as root starts a program as its
// manifest's user. It refuses to start an agent that names none: an agent of a root
// node runs as root only where its manifest says user = "root" (warned about), and
// then, on Linux, without any capability. A command supervisor or tool with no user
// runs as root without capabilities too (on macOS as root, warned about). A node run
// as another user starts programs as itself only.
func (n *Node) runAs(key string, p program, policy *sandbox.Policy) error {
	root := os.Geteuid() == 0
	switch name := p.User; {
	case name == "" && root && p.dialect != "":
		return rootAgent(key)
	case name == "" && root && runtime.GOOS != "linux":
		n.log.Warn("the node runs as root, and so does this program: it can read what root can, the node's environment included; set its user to an unprivileged user (docs/security.md)", "program", key)
	case name == "":
	case isRoot(name):
		if !root {
			return fmt.Errorf("node: %s: user = %q, and this node runs as uid %d: it starts programs as itself only; leave user out, or run the node as root", key, name, os.Geteuid())
		}
		n.log.Warn("this program runs as root, as its manifest says (on Linux without any capability): it reads and writes what root owns within its sandbox's rules (/etc/shadow and /root included); give it an unprivileged user instead (docs/security.md)", "program", key)
	default:
		u, err := lookupUser(name)
		if err != nil {
			return fmt.Errorf("node: %s: user = %q: %w", key, name, err)
		}
		if !root {
			if int(u.Uid) != os.Geteuid() {
				return fmt.Errorf("node: %s: user = %q, and this node runs as uid %d: only a node run as root starts programs as another user; leave user out, or run the node as root", key, name, os.Geteuid())
			}
			return nil
		}
		if p.dialect != "" && len(p.workIn) > 0 {
			return fmt.Errorf("node: %s: user = %q with a workspace: the node makes the checkouts as root, which %s could not write; use workspace = \"shared\" with a working_dir of that user's, or leave user out", key, name, name)
		}
		policy.As = u
		if path, err := exec.LookPath(p.Command); err == nil {
			if why := unrunnable(path, u); why != "" {
				n.log.Warn("the program's user cannot run its command as the node finds it on PATH: name a command that user can run", "program", key, "user", name, "command", path, "why", why)
			}
		}
		for _, dir := range policy.Write {
			if why := unwritable(dir, u); why != "" {
				n.log.Warn("the program's user cannot write a directory it is given: make it that user's", "program", key, "user", name, "dir", dir, "why", why)
			}
		}
	}
	return nil
}

// AgentsAsRoot says, for a node run as root, which of m's hosts it would refuse to
// start: those whose agents name no user. Nothing for a node run as another user.
func AgentsAsRoot(m *config.Manifest) []string {
	if os.Geteuid() != 0 {
		return nil
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(m.Hosts)) {
		if h := m.Hosts[name]; h.Attached == nil && h.User == "" {
			out = append(out, strings.TrimPrefix(rootAgent("hosts."+name).Error(), "node: "))
		}
	}
	return out
}

// rootAgent is the refusal of an agent of a node run as root whose host names no user.
func rootAgent(key string) error {
	return fmt.Errorf("node: %s: this node runs as root and the host names no user, so its agents would run as root: "+
		"set user = \"<an unprivileged user>\" to run them as that user, or user = \"root\" to run them as root (docs/security.md)", key)
}

// isRoot reports whether a manifest's user names root.
func isRoot(name string) bool { return name == "root" || name == "0" }

// lookupUser finds a user by name or uid, with the groups it belongs to.
func lookupUser(name string) (*sandbox.User, error) {
	u, err := user.Lookup(name)
	if _, numeric := strconv.Atoi(name); err != nil && numeric == nil {
		u, err = user.LookupId(name)
	}
	if err != nil {
		return nil, fmt.Errorf("no such user on this machine: %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("user %s has uid %q and gid %q, which are not numbers", name, u.Uid, u.Gid)
	}
	if uid == 0 {
		return nil, fmt.Errorf("user %s is root: say user = \"root\" to run it as root", name)
	}
	out := &sandbox.User{Name: u.Username, Uid: uint32(uid), Gid: uint32(gid)}
	groups, _ := u.GroupIds()
	for _, g := range groups {
		if v, err := strconv.ParseUint(g, 10, 32); err == nil {
			out.Groups = append(out.Groups, uint32(v))
		}
	}
	return out, nil
}

// unwritable says why user u cannot write dir, by the mode bits of dir and of the
// directories above it; "" if it can (or nothing is known).
func unwritable(dir string, u *sandbox.User) string {
	if !allows(dir, u, 0o2) {
		return dir + " is not writable by " + u.Name
	}
	return unpassable(filepath.Dir(dir), u)
}

// unrunnable says why user u cannot run the program at path; "" if it can.
func unrunnable(path string, u *sandbox.User) string {
	if !allows(path, u, 0o1) {
		return path + " is not executable by " + u.Name
	}
	return unpassable(filepath.Dir(path), u)
}

// unpassable names the first directory from dir up that u cannot pass; "" if none.
func unpassable(dir string, u *sandbox.User) string {
	for d := dir; ; d = filepath.Dir(d) {
		if !allows(d, u, 0o1) {
			return d + " cannot be passed by " + u.Name
		}
		if d == filepath.Dir(d) {
			return ""
		}
	}
}

// allows reports whether u has access bit (0o2 write, 0o1 search) on path by its mode.
func allows(path string, u *sandbox.User, bit os.FileMode) bool {
	info, err := os.Stat(path)
	if err != nil {
		return true // nothing known: no warning
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return true
	}
	perm := info.Mode().Perm()
	switch {
	case st.Uid == u.Uid:
		return perm&(bit<<6) != 0
	case st.Gid == u.Gid || slices.Contains(u.Groups, st.Gid):
		return perm&(bit<<3) != 0
	}
	return perm&bit != 0
}
