package shim

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Registry records the process groups a node started in its store, so that a node
// starting on that store kills those that outlived their node: a shim killed with it
// (the OOM killer, `kill -9` of every process) could not take its group down. Each
// group is a file named for its leader's pid holding the leader's start time, so a
// pid reused since is left alone. A nil Registry records nothing.
type Registry struct {
	dir string
}

// OpenRegistry keeps its records in dir, created if need be.
func OpenRegistry(dir string) (*Registry, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("shim: process records: %w", err)
	}
	return &Registry{dir: dir}, nil
}

// Record notes the group pid leads.
func (r *Registry) Record(pid int) {
	if r == nil {
		return
	}
	if start, ok := startTime(pid); ok {
		_ = os.WriteFile(filepath.Join(r.dir, strconv.Itoa(pid)), []byte(start), 0o600)
	}
}

// Forget drops the record of pid's group, which ended.
func (r *Registry) Forget(pid int) {
	if r != nil {
		_ = os.Remove(filepath.Join(r.dir, strconv.Itoa(pid)))
	}
}

// Sweep kills every recorded group that still has a process and forgets them all; it
// returns the ids of the groups it killed. A group whose leader runs is ours only if the
// leader started when recorded (a pid can be reused); one whose leader died (the shim,
// killed with its node) is ours whatever runs in it: Linux does not hand out a number
// still in use as a group's id.
func (r *Registry) Sweep() []int {
	if r == nil {
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
		recorded, _ := os.ReadFile(path)
		start, leads := startTime(pid)
		if (!leads || start == string(recorded)) && syscall.Kill(-pid, syscall.SIGKILL) == nil {
			killed = append(killed, pid)
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
