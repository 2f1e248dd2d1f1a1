package peers

import "syscall"

// dieWithParent has the kernel kill a peer's process if this one dies first, so a
// killed run leaves no server behind.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
