package proctest

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Env is the variable tests put the marker in.
const Env = "AGENTMUX_TEST_MARK"

// Marked lists the live processes whose environment holds Env=mark; zombies, already
// dead, are left out.
func Marked(mark string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !strings.Contains(string(env), Env+"="+mark) {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && strings.Contains(string(stat), ") Z ") {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// FreePort is a loopback TCP port free a moment ago, for a process the test starts to
// listen on when the port must be known in advance (a cluster's routes).
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
