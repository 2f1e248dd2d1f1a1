// Package shim keeps a child process's whole process group from outliving its parent.
//
// Linux kills a process whose parent dies only when it asked for it (a parent-death
// signal), and only that process: an agent's own children (`sleep 1001 &`), or a
// command supervisor's, would run on under PID 1 after a node is killed. So every agent
// and command starts under a few lines of POSIX sh: the shell leads a new process
// group, gets SIGUSR1 from the kernel when the node dies, runs the command in its group,
// and on that signal kills the group, itself included. Otherwise it only waits, and
// exits as the command did: its exit status, or the signal that killed it.
//
// A shell, not this binary run again: a Go binary of this size takes tens of
// milliseconds of CPU to start, which 200 agents starting at once turned into seconds;
// dash starts in one.
//
// Lower makes a command run below the node's priority (a host's nice), from its first
// instruction, so agents that keep the cores busy leave the node the CPU to answer them.
//
//	cmd, err := shim.Command(ctx, "python3", "agent.py")
package shim
