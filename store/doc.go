// Package store keeps what agentmux holds in JetStream: it declares the task, audit and
// event streams and the buckets (Declare, which a node calls as it starts, with the
// history [audit] keeps), and reads and writes them: requests waiting for a person and
// their answers (PendingStore, Answer, ServeRespond), llm supervisors' memory, pipeline
// runs, node heartbeats, the work queue (ReadTasks, RemoveTask), a session's audit
// records (ReadAudit) and events (Events), and the audit across sessions (SearchAudit).
// It also asks the live nodes, which it finds by their heartbeats, for the rules files
// they keep and changes them (ListRules, ChangeRules).
//
// Every reader retries while a cluster settles (Settled); a bucket no node declared
// yet says so. A reader of the bus reads with message gets, which its role permits,
// never with a consumer of its own.
package store
