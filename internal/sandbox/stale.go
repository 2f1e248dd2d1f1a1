package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// tempPrefix begins every sandbox's temporary directory, before its program's name and
// the pid of the node that made it: "agentmux-hosts.claude-pid4242-…".
const tempPrefix = "agentmux-"

// tempPattern is os.MkdirTemp's pattern for the temporary directory of the programs
// name runs, in this process.
func tempPattern(name string) string {
	return tempPrefix + name + "-pid" + strconv.Itoa(os.Getpid()) + "-"
}

// SweepStale removes, from dir (os.TempDir() when empty), the temporary directories
// that sandboxes of nodes no longer running left behind: a node killed with SIGKILL
// cannot remove its own. It removes only this user's, and only those whose node's
// process is gone, and returns what it removed.
func SweepStale(dir string) ([]string, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, e := range entries {
		pid, ok := tempOwner(e.Name())
		if !ok || !e.IsDir() || pid == os.Getpid() || alive(pid) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if info, err := e.Info(); err != nil || !ownedByMe(info) {
			continue
		}
		if err := os.RemoveAll(path); err == nil {
			removed = append(removed, path)
		}
	}
	return removed, nil
}

// tempOwner is the pid in a sandbox's temporary directory's name.
func tempOwner(name string) (int, bool) {
	if !strings.HasPrefix(name, tempPrefix) {
		return 0, false
	}
	i := strings.LastIndex(name, "-pid")
	if i < 0 {
		return 0, false
	}
	digits, _, ok := strings.Cut(name[i+len("-pid"):], "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(digits)
	return pid, err == nil && pid > 0
}

// alive reports whether process pid exists (one of another user's too).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// ownedByMe reports whether this process's user owns the file.
func ownedByMe(info os.FileInfo) bool { return ownedBy(info, strconv.Itoa(os.Getuid())) }

// ownedBy reports whether user uid (in decimal) owns the file.
func ownedBy(info os.FileInfo, uid string) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && strconv.FormatUint(uint64(st.Uid), 10) == uid
}
