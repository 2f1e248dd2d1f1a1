package main

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentmux/agentmux/internal/proctest"
)

// TestHealth: `agentmux health` is what a container without curl checks. It exits 0 while
// the node is ready, 1 once it drains (saying so) and once no node answers, and 2 for an
// address it cannot reach at all.
func TestHealth(t *testing.T) {
	t.Parallel()
	manifest := nodeManifest(t)
	port := proctest.FreePort(t)
	text, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	// All interfaces, as in a container: health reaches it on loopback.
	text = []byte(strings.Replace(string(text), `addr = "127.0.0.1:0"`, fmt.Sprintf(`addr = "0.0.0.0:%d"`, port), 1))
	if err := os.WriteFile(manifest, text, 0o600); err != nil {
		t.Fatal(err)
	}
	up := runtimeProc(t, "up", "-c", manifest, "--name", "h1")
	until(t, "agentmux up", up.stderr, "node up")

	ready := runtimeProc(t, "health", "-c", manifest)
	if code := ready.wait(t, 10*time.Second); code != exitOK || strings.TrimSpace(ready.stdout.String()) != "ready" {
		t.Fatalf("health of a ready node: exit %d, stdout %q, stderr %q", code, ready.stdout, ready.stderr)
	}
	byAddr := runtimeProc(t, "health", "--addr", fmt.Sprintf("localhost:%d", port))
	if code := byAddr.wait(t, 10*time.Second); code != exitOK {
		t.Fatalf("health --addr: exit %d, stderr %q", code, byAddr.stderr)
	}

	if code := runtimeProc(t, "drain", "-c", manifest, "h1", "--grace", "0s", "--wait").wait(t, 30*time.Second); code != exitOK {
		t.Fatalf("drain: exit %d", code)
	}
	// The node's readiness follows the drain within a heartbeat.
	proctest.Within(t, 30*time.Second, func() error {
		draining := runtimeProc(t, "health", "-c", manifest)
		code := draining.wait(t, 10*time.Second)
		if code == exitError && strings.Contains(draining.stderr.String(), "answered 503 Service Unavailable: not ready") &&
			strings.Contains(draining.stderr.String(), "draining") {
			return nil
		}
		if code != exitOK {
			t.Fatalf("health of a draining node: exit %d, stderr %q", code, draining.stderr)
		}
		return fmt.Errorf("health of a node drained 30 s ago: exit %d, stderr %q; want not ready, draining", code, draining.stderr)
	})

	if err := up.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := up.wait(t, 30*time.Second); code != exitOK {
		t.Fatalf("agentmux up after SIGTERM: exit %d", code)
	}
	gone := runtimeProc(t, "health", "-c", manifest)
	if code := gone.wait(t, 10*time.Second); code != exitError || !strings.Contains(gone.stderr.String(), "no node answers on http://127.0.0.1:") {
		t.Fatalf("health with no node: exit %d, stderr %q", code, gone.stderr)
	}

	noPort := runtimeProc(t, "health", "--addr", "127.0.0.1:0")
	if code := noPort.wait(t, 10*time.Second); code != exitUsage || !strings.Contains(noPort.stderr.String(), "has no port to reach") {
		t.Fatalf("health --addr without a port: exit %d, stderr %q", code, noPort.stderr)
	}
}
