// Package nodump keeps the other processes of the node's user out of the node: its
// agents run as that user, and must not read the node's environment (the bus's and the
// model providers' secrets) or its memory, nor attach a debugger to it.
//
// On Linux, Apply makes the process not dumpable (prctl PR_SET_DUMPABLE 0): the kernel
// then refuses /proc/<pid>/environ, /proc/<pid>/mem and ptrace to every process without
// CAP_SYS_PTRACE, the same user's included. A child is dumpable again once it execs, so
// the agents the node starts are not affected. On macOS, Apply denies debuggers
// (ptrace PT_DENY_ATTACH); macOS still shows a process's environment to its own user
// (ps -E), so keep secrets there in files the agents cannot read (docs/security.md).
//
//	if err := nodump.Apply(); err != nil {
//		log.Warn("the node's memory stays readable by its user", "err", err)
//	}
//
// Apply affects the whole process; call it once, early.
package nodump
