//go:build linux

package nodump

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Apply makes this process not dumpable.
func Apply() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("nodump: prctl(PR_SET_DUMPABLE, 0): %w", err)
	}
	return nil
}
