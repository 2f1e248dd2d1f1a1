// Package wire is agentmux's subject API: the name of every subject, header, stream
// and bucket, the JSON payloads that travel on them, and their codecs. It imports no
// NATS client or server, so a supervisor or tool written in Go uses the API with
// whichever client it likes.
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
//	agentmux.revoke.<user>.<grant id>         request/reply: a person revokes a grant
//
// and the KV buckets agentmux_pending (requests waiting for people), agentmux_nodes
// (heartbeats), agentmux_pipelines (runs), agentmux_paused (paused sessions) and
// agentmux_memory (llm supervisors' exchanges). README.md's "NATS subject API" gives every payload.
//
// Each noun keeps its subjects and payloads in a file of its own: tasks.go, events.go,
// asks.go, audit.go, pending.go (what waits for people and their answers), grants.go,
// attach.go, and so on; subjects.go has the prefixes and the names every subject
// takes, codec.go and codec_gen.go the request path's codecs.
package wire
