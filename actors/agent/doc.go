// Package agent runs one agent process as a protoactor actor: it spawns the process in
// its own process group, frames and decodes its stdout, publishes every message as an
// event, sends each request to a supervisor over NATS and writes exactly one answer back
// within the request's deadline, and runs the session timers and the stop ladder.
//
// Place in the architecture: the Router spawns Agent actors as children, one per process,
// and hands each a session at a time (a process serves many sessions in turn; init is
// sent once). The Agent reports SessionEnded to its parent at each session's end, and
// AgentExited once its process is gone; the parent then stops it (were it to stop itself,
// Terminated could overtake the SessionEnded still in the parent's mailbox).
//
// Lifecycle: the actor is in one phase at a time (lifecycle.go) — unspawned, starting,
// initializing, idle, busy, stopping, exited, gone — and each phase is a state on the
// agents gauge; the moves between them are one table, and a move it lacks is refused.
//
// Concurrency promise: Receive never blocks. Four goroutines per process do the blocking
// work — the stdout reader, the stdin writer (with a write deadline), the waiter, and the
// stderr reader — and report back by sending messages to the actor. Timers and NATS
// requests do the same. The one thing a goroutine does without the actor: the stdout
// reader publishes a running session's progress, log and heartbeat lines itself, through
// a sink the actor opens at the session's start and closes at its end (stream.go).
// Every goroutine ends when the process and its pipes are gone.
//
// Files by concern: session.go a session's state, start and end; lines.go what the
// agent sends; requests.go its requests and their answers, stages.go the stages a
// request passes to its answer (each capability that answers or annotates requests is
// one: a new one is a stage and a row); result.go its result
// (typed results, reprompts); control.go timers, interrupts and messages; proc.go and
// stream.go the process and its output; shared.go what a host's agents share (their
// logger and metrics, looked up once per host: the Router makes one per host); env.go
// what every agent of a node shares (Env, made once by the node).
//
//	env := agent.NewEnv(agent.Env{Node: "n1", Conn: nc, Asker: asker, Metrics: m, Log: log})
//	props := agent.Props(agent.Config{Env: env, Host: h, Routes: manifest.Routes})
//	pid := c.Spawn(props)
//	c.Send(pid, &agent.StartSession{Session: "s-1", Prompt: "fix the build", Reply: done})
package agent
