// Package store keeps what agentmux holds in JetStream: it declares the task and audit
// streams and the buckets (Declare, which a node calls as it starts), and reads and
// writes them: requests waiting for a person and their answers (PendingStore, Answer,
// ServeRespond), llm supervisors' memory, pipeline runs, node heartbeats, and a
// session's audit records (ReadAudit).
//
// Every reader retries while a cluster settles (Settled); a bucket no node declared
// yet says so. A reader of the bus reads with message gets, which its role permits,
// never with a consumer of its own.
package store
