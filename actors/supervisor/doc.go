// Package supervisor runs one configured supervisor as an actor: it subscribes to
// agentmux.ask.<name> in queue group <name> (so any number of nodes share the load),
// runs up to `concurrency` decisions at once with its decide.Decider, and replies to
// each request before its deadline or not at all (the agent's node then writes the
// default).
//
// Concurrency promise: Receive never blocks. The NATS callback only forwards each
// request to the actor; each decision runs in its own goroutine, replies itself and
// reports back so the actor can start the next queued one. Requests whose deadline
// passed while queued are dropped, never decided late.
//
//	pid := system.Root.Spawn(supervisor.Props(supervisor.Config{Supervisor: s, Decider: d, Conn: nc, Metrics: m, Log: log}))
package supervisor
