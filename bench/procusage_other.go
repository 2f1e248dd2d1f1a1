//go:build !linux && !darwin

package bench

import (
	"fmt"
	"runtime"
)

// processUsage is not read here: a peer's processes cannot be counted.
func processUsage(pid int) (procUsage, error) {
	return procUsage{}, fmt.Errorf("another process's CPU is not read on %s: run the peers on Linux or macOS", runtime.GOOS)
}
