// Package sandbox starts the programs a node runs for others (agents, command
// supervisors, tools) where they cannot reach the node: they read the whole system but
// the node's state directory, store and credential files, write only their working
// directory, a temporary directory of their own and the paths a manifest lists, cannot
// connect to the node's ports, and cannot signal or trace processes outside their own
// sandbox, the node's included.
//
// On Linux it uses Landlock, which a process applies to itself and its descendants. A
// Go program cannot run code between fork and exec, so a Sandbox keeps one OS thread
// for the programs it starts: the thread restricts itself, once, and starts every
// program from then on (a child inherits the restrictions of the thread that forked
// it). The node's other threads are not restricted. The thread lives while a program it
// started runs: a child's parent-death signal follows the thread that started it.
//
// The ports denied are the policy's and those every agentmux process of the machine
// listens on (Announce): when these change, the next Start builds the sandbox again, a
// new thread, so that a program is denied every port listening when it starts.
//
// Landlock only grants: there is no rule that takes a path away from a tree granted
// above it. A denied path is carved out instead: its parent is not granted, each of its
// siblings is, and so on up to the granted tree. Such a parent keeps what was in it when
// the sandbox was built; entries made there later are out of reach (the tree they would
// be in is not granted), and nothing can be created in it directly.
//
//	sb := sandbox.New("hosts.claude", policy)
//	defer sb.Close()
//	cmd, _ := shim.Command(ctx, "claude", args...)
//	err := sb.Start(cmd) // as cmd.Start, in the sandbox
//
// On macOS it uses Seatbelt: Start has sandbox-exec run the program under a profile
// made from the same Policy (seatbelt.go), which goes to its descendants too.
//
// A nil *Sandbox starts programs as cmd.Start does. On other systems New returns a
// Sandbox whose Start fails: a node there leaves sandbox out (see Mechanism).
package sandbox
