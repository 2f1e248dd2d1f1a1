// Package node is agentmux's composition root: a table of services (services.go) —
// the process registry, the metrics server, the bus (embedded NATS or an external
// cluster), the auditor and the Asker, sandboxes and workspaces, the actor system,
// grants, supervisors, notifiers, the router, control subjects and the heartbeat —
// started in the table's order and stopped in reverse, and the agent.Env its agents
// share.
//
// Start ends with the router pulling tasks and the first heartbeat; a service that
// fails to start stops those started before it. Stop begins with the last heartbeat,
// then the router interrupts sessions and answers their pending requests "cancelled",
// every process gets its stop ladder, the supervisors and the actors' goroutines stop,
// the audit is flushed, NATS drained, the embedded server and metrics stopped.
//
//	n, err := node.Start(ctx, node.Options{Manifest: m, Log: log})
//	res, err := n.Run(ctx, "worker", "", "fix the build")
//	err = n.Stop(ctx)
//
// A Node's methods are safe for concurrent use; Stop is idempotent.
package node
