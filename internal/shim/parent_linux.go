package shim

import "syscall"

// parentDeathSignal: Linux signals a process when the thread that started it dies
// (PR_SET_PDEATHSIG).
const parentDeathSignal = true

// onParentDeath has the kernel send sig to the process when its parent dies.
func onParentDeath(a *syscall.SysProcAttr, sig syscall.Signal) { a.Pdeathsig = sig }
