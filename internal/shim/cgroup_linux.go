//go:build linux

package shim

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// cgroupTree is the cgroup (version 2: the unified hierarchy, or its mount beside
// version 1's on a hybrid system) a node makes its commands' cgroups in: one of its
// own, below the node's.
type cgroupTree struct {
	dir string
}

// openCgroupTree makes the node's tree, or says why it cannot: no cgroup2 mounted, or
// no right to move a process out of the node's own cgroup (which a cgroup delegated to
// the node's user gives, systemd's Delegate=yes).
func openCgroupTree() (*cgroupTree, error) {
	mount, err := cgroup2Mount()
	if err != nil {
		return nil, err
	}
	own, err := ownCgroup()
	if err != nil {
		return nil, err
	}
	parent := filepath.Join(mount, own)
	if err := unix.Access(filepath.Join(parent, "cgroup.procs"), unix.W_OK); err != nil {
		return nil, fmt.Errorf("shim: cannot move processes out of this process's cgroup %s (%w); delegate it to the node's user (systemd: Delegate=yes)", parent, err)
	}
	sweepDeadTrees(parent)
	dir, err := os.MkdirTemp(parent, treePrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return nil, fmt.Errorf("shim: make a cgroup under %s: %w", parent, err)
	}
	return &cgroupTree{dir: dir}, nil
}

// treePrefix starts the name of a node's tree, "agentmux-<pid>-<random>".
const treePrefix = "agentmux-"

// sweepDeadTrees kills what the trees of nodes no longer running left in parent (their
// shims were killed with them) and removes the trees.
func sweepDeadTrees(parent string) {
	entries, _ := os.ReadDir(parent)
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), treePrefix)
		pid, err := strconv.Atoi(strings.SplitN(rest, "-", 2)[0])
		if !ok || err != nil || !e.IsDir() || !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			continue // not a tree, or its node runs (or another user's process has its pid)
		}
		tree := filepath.Join(parent, e.Name())
		groups, _ := os.ReadDir(tree)
		for _, g := range groups {
			if g.IsDir() {
				removeCgroup(filepath.Join(tree, g.Name()))
			}
		}
		_ = os.Remove(tree)
	}
}

// cgroup2Mount is where the cgroup2 hierarchy is mounted, from /proc/self/mountinfo.
func cgroup2Mount() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", fmt.Errorf("shim: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source super
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields := strings.Fields(pre)
		if ok && len(fields) >= 5 && strings.HasPrefix(post, "cgroup2 ") {
			return fields[4], nil
		}
	}
	return "", errors.New("shim: no cgroup2 hierarchy is mounted (a system of cgroup version 1 only)")
}

// ownCgroup is this process's cgroup in the cgroup2 hierarchy ("0::/path").
func ownCgroup() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", fmt.Errorf("shim: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if path, ok := strings.CutPrefix(line, "0::"); ok {
			return path, nil
		}
	}
	return "", errors.New("shim: this process has no cgroup2 cgroup")
}

// cgroup is one command's.
type cgroup struct {
	dir string
	fd  *os.File // the directory, for clone's CLONE_INTO_CGROUP; closed once started
}

// make makes a cgroup for one command, named name.
func (t *cgroupTree) make(name string) (*cgroup, error) {
	dir := filepath.Join(t.dir, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("shim: make cgroup %s: %w", dir, err)
	}
	fd, err := os.Open(dir)
	if err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("shim: open cgroup %s: %w", dir, err)
	}
	return &cgroup{dir: dir, fd: fd}, nil
}

// attach makes cmd start in g.
func (g *cgroup) attach(attr *syscall.SysProcAttr) {
	attr.UseCgroupFD = true
	attr.CgroupFD = int(g.fd.Fd())
}

// remove kills what is left in the cgroup at dir and removes it; the tree's directory
// too once it is empty.
func removeCgroup(dir string) {
	killCgroup(dir)
	deadline := time.Now().Add(2 * time.Second)
	for {
		err := os.Remove(dir)
		if err == nil || errors.Is(err, fs.ErrNotExist) || !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond) // the killed processes are still exiting
	}
}

// killCgroup kills every process in the cgroup at dir: at once through cgroup.kill
// (Linux 5.14), or each process in turn, until none is left, before.
func killCgroup(dir string) {
	if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return
	}
	for range 100 {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		pids := strings.Fields(string(b))
		if err != nil || len(pids) == 0 {
			return
		}
		for _, p := range pids {
			if pid, err := strconv.Atoi(p); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}

// close removes the tree's directory, empty once every command's cgroup is gone.
func (t *cgroupTree) close() { _ = os.Remove(t.dir) }
