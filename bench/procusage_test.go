package bench

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agentmux/agentmux/internal/proctest"
)

// TestProcessUsage reads a busy child's CPU and memory as they grow, and says plainly
// that an exited one cannot be read.
func TestProcessUsage(t *testing.T) {
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	pid := cmd.Process.Pid
	proctest.Within(t, 30*time.Second, func() error {
		u, err := processUsage(pid)
		if err != nil {
			t.Fatal(err)
		}
		if u.cpu >= 0.1 && u.rss > 0 {
			return nil
		}
		return fmt.Errorf("after 30 s of a busy loop: %.2f CPU seconds, %d bytes", u.cpu, u.rss)
	})
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if _, err := processesUsage([]int{pid}); err == nil || !strings.Contains(err.Error(), "exited") {
		t.Fatalf("an exited process: %v, want it said to have exited", err)
	}
}

func TestParseCPUTime(t *testing.T) {
	for in, want := range map[string]float64{"0:01.50": 1.5, "12:03.25": 723.25, "1:00:00.00": 3600, "2-01:00:00.00": 2*86400 + 3600} {
		got, err := parseCPUTime(in)
		if err != nil || got != want {
			t.Errorf("parseCPUTime(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := parseCPUTime("1:xx"); err == nil {
		t.Error("parseCPUTime(1:xx) took it")
	}
}
