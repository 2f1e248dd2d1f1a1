package shim

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Registry runs a node's commands each in a cgroup of its own where the node may make
// one (Linux, cgroup v2), and records them in its store, so that a node starting on
// that store kills those that outlived their node: a shim killed with it (the OOM
// killer, `kill -9` of every process) could not take its group down. Each record is a
// file named for its group leader's pid holding the leader's start time and its
// cgroup, so a pid reused since is left alone. A nil Registry records nothing and makes
// no cgroups.
type Registry struct {
	dir  string      // the records; "": none
	tree *cgroupTree // nil: no cgroups

	mu     sync.Mutex
	seq    int
	groups map[*exec.Cmd]*cgroup
}

// OpenRegistry keeps its records in dir, created if need be; dir "" keeps none.
func OpenRegistry(dir string) (*Registry, error) {
	if dir != "" {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, fmt.Errorf("shim: process records: %w", err)
		}
	}
	return &Registry{dir: dir, groups: map[*exec.Cmd]*cgroup{}}, nil
}

// UseCgroups makes the commands of r start each in a cgroup of its own, in a tree of
// the node's under its own cgroup, or says why they cannot.
func (r *Registry) UseCgroups() error {
	t, err := openCgroupTree()
	if err == nil {
		r.tree = t
	}
	return err
}

// Close removes the tree of cgroups, once every command is forgotten.
func (r *Registry) Close() {
	if r != nil && r.tree != nil {
		r.tree.close()
	}
}

// Command is the package's Command, in a cgroup of its own where r makes them. Record
// the command once started, and Forget it once waited for (or if it did not start).
func (r *Registry) Command(ctx context.Context, name string, args ...string) (*exec.Cmd, error) {
	if r == nil || r.tree == nil {
		return Command(ctx, name, args...)
	}
	r.mu.Lock()
	r.seq++
	seq := r.seq
	r.mu.Unlock()
	g, err := r.tree.make(strconv.Itoa(seq))
	if err != nil {
		return nil, err
	}
	cmd, err := command(ctx, filepath.Join(g.dir, "cgroup.procs"), name, args)
	if err != nil {
		g.fd.Close()
		removeCgroup(g.dir)
		return nil, err
	}
	g.attach(cmd.SysProcAttr)
	r.mu.Lock()
	r.groups[cmd] = g
	r.mu.Unlock()
	return cmd, nil
}

// Record notes the group cmd leads, which has started.
func (r *Registry) Record(cmd *exec.Cmd) {
	if r == nil {
		return
	}
	r.mu.Lock()
	g := r.groups[cmd]
	r.mu.Unlock()
	cgroupDir := ""
	if g != nil {
		g.fd.Close() // CLONE_INTO_CGROUP has used it
		cgroupDir = g.dir
	}
	if r.dir == "" {
		return
	}
	if start, ok := startTime(cmd.Process.Pid); ok {
		_ = os.WriteFile(filepath.Join(r.dir, strconv.Itoa(cmd.Process.Pid)), []byte(start+"\n"+cgroupDir), 0o600)
	}
}

// Forget kills what cmd's cgroup still holds (a process that left the group with
// setsid), removes the cgroup, and drops the record of cmd's group: cmd has ended, or
// never started.
func (r *Registry) Forget(cmd *exec.Cmd) {
	if r == nil {
		return
	}
	r.mu.Lock()
	g := r.groups[cmd]
	delete(r.groups, cmd)
	r.mu.Unlock()
	if g != nil {
		g.fd.Close()
		removeCgroup(g.dir)
	}
	if r.dir != "" && cmd.Process != nil {
		_ = os.Remove(filepath.Join(r.dir, strconv.Itoa(cmd.Process.Pid)))
	}
}

// Sweep kills every recorded group that still has a process, and what its cgroup
// holds, and forgets them all; it returns the ids of the groups it killed. A group
// whose leader runs is ours only if the leader started when recorded (a pid can be
// reused); one whose leader died (the shim, killed with its node) is ours whatever runs
// in it: Linux does not hand out a number still in use as a group's id.
func (r *Registry) Sweep() []int {
	if r == nil || r.dir == "" {
		return nil
	}
	entries, _ := os.ReadDir(r.dir)
	var killed []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		path := filepath.Join(r.dir, e.Name())
		if err != nil {
			continue
		}
		b, _ := os.ReadFile(path)
		recorded, cgroupDir, _ := strings.Cut(string(b), "\n")
		start, leads := startTime(pid)
		if (!leads || start == recorded) && syscall.Kill(-pid, syscall.SIGKILL) == nil {
			killed = append(killed, pid)
		}
		if cgroupDir != "" {
			removeCgroup(cgroupDir)
			_ = os.Remove(filepath.Dir(cgroupDir)) // the dead node's tree, once empty
		}
		_ = os.Remove(path)
	}
	return killed
}

// startTime is field 22 of /proc/<pid>/stat: when the process started, in clock ticks
// since boot.
func startTime(pid int) (string, bool) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", false
	}
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 20 {
		return "", false
	}
	return fields[19], true
}

// CheckCgroups says why a node of this process could not start its commands in cgroups
// of their own, or nil when it could (UseCgroups would succeed).
func CheckCgroups() error {
	t, err := openCgroupTree()
	if err == nil {
		t.close()
	}
	return err
}
