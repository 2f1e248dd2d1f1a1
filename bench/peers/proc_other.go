//go:build !linux

package peers

import "syscall"

// dieWithParent is nothing here: macOS has no parent-death signal, so a peer's
// process outlives a run killed with SIGKILL (one stopped by a signal it can catch
// stops its processes).
func dieWithParent() *syscall.SysProcAttr { return nil }
