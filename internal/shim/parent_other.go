//go:build !linux

package shim

import "syscall"

// parentDeathSignal: this system sends none (macOS has no PR_SET_PDEATHSIG); the shim
// watches its parent itself.
const parentDeathSignal = false

// onParentDeath does nothing here: the shim watches (see script).
func onParentDeath(*syscall.SysProcAttr, syscall.Signal) {}
