// Package bus connects agentmux to NATS: it runs an embedded server or connects to an
// external server or cluster, names every subject and header of the public subject API,
// declares the JetStream streams, and defines the JSON payloads that travel on them.
//
// The subject scheme is a public API; a supervisor or a tool written in any language
// with a NATS client is a first-class citizen:
//
//	agentmux.task.<host>                      JetStream work queue AGENTMUX_TASKS: Task
//	agentmux.task.<pipeline>                  the same stream: PipelineTask, a pipeline's run
//	agentmux.evt.<host>.<session>.<type>      core publish: every message and lifecycle event
//	agentmux.ask.<supervisor>                 request/reply, queue group: Ask → Reply
//	agentmux.ask.<supervisor>.<member>        the same, to one member by name (a re-ask)
//	agentmux.audit.<host>.<session>           JetStream AGENTMUX_AUDIT: AuditRecord
//	agentmux.ctl.<node>.<verb>                control requests to one node
//	agentmux.tool.<tool>                      request/reply: a tool served outside the node
//	agentmux.human.<supervisor>.<id>          core publish: a request now waiting for a person
//	agentmux.respond.<user>.<id>              request/reply: a person's answer, as <user>
//
// and the KV buckets agentmux_pending (requests waiting for people), agentmux_nodes
// (heartbeats), agentmux_pipelines (runs) and agentmux_memory (llm supervisors'
// exchanges). README.md's "NATS subject API" gives every payload.
//
// A Bus holds one connection for the whole process (no subscription per session). Its
// methods are safe for concurrent use; Close is idempotent. The Asker sends a node's
// asks over one reply subscription; a StreamPublisher publishes a node's audit records
// over another, each published again under its id until the stream acknowledges it.
package bus
