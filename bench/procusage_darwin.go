package bench

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// processUsage is a process's CPU seconds and resident memory as ps(1) reports them:
// macOS keeps no peak of another process's memory, so rss is its memory now.
func processUsage(pid int) (procUsage, error) {
	out, err := exec.Command("ps", "-o", "cputime=,rss=", "-p", strconv.Itoa(pid)).Output()
	if err != nil && len(strings.TrimSpace(string(out))) == 0 {
		return procUsage{}, fmt.Errorf("it has exited, so its CPU and memory cannot be read: see its log")
	}
	if err != nil {
		return procUsage{}, fmt.Errorf("ps -p %d: %w", pid, err)
	}
	f := strings.Fields(string(out))
	if len(f) != 2 {
		return procUsage{}, fmt.Errorf("ps -p %d: %q", pid, out)
	}
	cpu, err := parseCPUTime(f[0])
	if err != nil {
		return procUsage{}, fmt.Errorf("ps -p %d: %w", pid, err)
	}
	kb, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return procUsage{}, fmt.Errorf("ps -p %d: rss %q", pid, f[1])
	}
	return procUsage{cpu: cpu, rss: kb * 1024}, nil
}
