package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// portsDir is where the agentmux processes of this machine say which ports they
// listen on, a directory per user ("/tmp/agentmux-ports-1000"), which only that user
// writes: every sandbox reads all of them, whoever runs it. It is /tmp itself, not
// os.TempDir(), so that processes with different TMPDIRs still meet.
const portsDir = "/tmp"

const portsPrefix = "agentmux-ports-"

// Announce says that this process listens on port: every program a sandbox of this
// machine starts from then on, whatever node or user runs it, cannot connect to it
// (Linux needs Landlock ABI 4). release takes it back; a process killed before it
// could is passed over, its pid gone.
func Announce(port uint16) (release func(), err error) {
	return announce(portsDir, port)
}

func announce(root string, port uint16) (func(), error) {
	dir := filepath.Join(root, portsPrefix+strconv.Itoa(os.Getuid()))
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("sandbox: announcing port %d to this machine's sandboxes: %w", port, err)
	}
	info, err := os.Lstat(dir)
	switch {
	case err != nil:
		return nil, fmt.Errorf("sandbox: announcing port %d to this machine's sandboxes: %w", port, err)
	case !info.IsDir() || !ownedByMe(info) || info.Mode().Perm()&0o022 != 0:
		return nil, fmt.Errorf("sandbox: %s is not a directory only this user writes, so sandboxes would not trust the ports in it: remove it", dir)
	}
	sweepPorts(dir)
	path := filepath.Join(dir, fmt.Sprintf("%d-%d", port, os.Getpid()))
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		return nil, fmt.Errorf("sandbox: announcing port %d to this machine's sandboxes: %w", port, err)
	}
	return func() { _ = os.Remove(path) }, nil
}

// Announced is the ports this machine's agentmux processes listen on, as Announce
// recorded them, sorted: those of live processes, in directories their user alone
// writes.
func Announced() []uint16 { return announced(portsDir) }

func announced(root string) []uint16 {
	var out []uint16
	for _, l := range listeners(root) {
		out = append(out, l.port)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// listener is one port a live agentmux process announced.
type listener struct {
	port uint16
	pid  int
}

// listeners are the announcements of live processes, in directories their user alone
// writes.
func listeners(root string) []listener {
	dirs, _ := os.ReadDir(root)
	var out []listener
	for _, d := range dirs {
		uid, ok := strings.CutPrefix(d.Name(), portsPrefix)
		if !ok || !d.IsDir() {
			continue
		}
		info, err := d.Info()
		if err != nil || !ownedBy(info, uid) || info.Mode().Perm()&0o022 != 0 {
			continue // another user's squat: the ports in it prove nothing
		}
		entries, _ := os.ReadDir(filepath.Join(root, d.Name()))
		for _, e := range entries {
			if port, pid, ok := portEntry(e.Name()); ok && alive(pid) {
				out = append(out, listener{port: port, pid: pid})
			}
		}
	}
	return out
}

// sweepPorts removes from dir the entries of processes no longer running.
func sweepPorts(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if _, pid, ok := portEntry(e.Name()); ok && !alive(pid) {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// portEntry reads an entry's name, "<port>-<pid>".
func portEntry(name string) (uint16, int, bool) {
	p, q, ok := strings.Cut(name, "-")
	port, err1 := strconv.ParseUint(p, 10, 16)
	pid, err2 := strconv.Atoi(q)
	return uint16(port), pid, ok && err1 == nil && err2 == nil && port > 0 && pid > 0
}
