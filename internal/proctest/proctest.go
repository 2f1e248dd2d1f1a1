// Package proctest finds the processes a test started, by a marker in their
// environment, so tests can show that none is left behind.
package proctest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
