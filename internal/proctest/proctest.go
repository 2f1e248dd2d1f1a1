package proctest

import (
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
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

// Ports below the kernels' ephemeral ranges (Linux 32768–60999, macOS 49152–65535):
// a port the kernel chose with :0 is one it may hand out again, a moment later, as the
// local end of any outgoing connection, and a test's server that starts after that
// cannot listen on it.
const (
	firstPort = 20000
	portSpan  = 12000
)

// nextPort is the offset of the next port FreePort tries; it starts at a random place
// so that test binaries run at once mostly try different ports, and it only grows so
// that one binary never hands out a port twice.
var nextPort = func() *atomic.Int64 {
	var n atomic.Int64
	n.Store(rand.Int64N(portSpan))
	return &n
}()

// FreePort is a loopback TCP port free a moment ago and outside the ephemeral range,
// for a process the test starts to listen on when the port must be known in advance
// (a manifest's [nats] listen, a cluster's routes).
func FreePort(t testing.TB) int {
	t.Helper()
	for range portSpan {
		port := firstPort + int(nextPort.Add(1)%portSpan)
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		ln.Close()
		return port
	}
	t.Fatalf("no free loopback port in %d–%d", firstPort, firstPort+portSpan-1)
	return 0
}
