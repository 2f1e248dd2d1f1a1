//go:build darwin

package nodump

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Apply denies debuggers this process.
func Apply() error {
	if err := unix.PtraceDenyAttach(); err != nil {
		return fmt.Errorf("nodump: ptrace(PT_DENY_ATTACH): %w", err)
	}
	return nil
}
