// Package attach supervises agent sessions agentmux did not start: Claude Code and
// Codex run by people, in a terminal, an IDE or a CI job, whose hooks send their
// approvals to the console's API ([attached.X] in the manifest). The console puts each
// on agentmux.attach.<source>; a node that runs the source takes it here.
//
// Each such agent session is an agentmux session of a host named for the source, so
// everything a session of a started agent has, it has: routes, the host's deadline and
// default, supervisors, people in the console, events, the audit and the metrics. Its
// process is a bridge run in the node (an agent.InProc): the Hub opens the session on
// the router at its first request, and the bridge writes each request as the agent's
// own request in agentmux's protocol, and replies to the hook with the response the
// node writes back. A session ends when its agent says so (Claude Code's SessionEnd) or
// when no request came for the source's idle_timeout; a later request opens it again
// as its next attempt. A session belongs to the user whose token opened it.
//
// Concurrency: the Hub's NATS callbacks never wait; each bridge is one goroutine per
// process with a reader of its stdin, as any in-process agent.
package attach
