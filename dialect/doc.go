// Package dialect translates real agents' stdio protocols to and from the canonical
// messages of protocol.md, so that routing, supervisors, timeouts, audit and metrics are
// the same for every agent. agentmux's own protocol is a dialect too (Native): its
// lines are canonical already, so an agent's reader decodes them as they come
// (Canonical), and it writes agentmux's own lines. A Dialect serves one process and is used by its agent actor
// alone; it keeps whatever per-process state the vendor's protocol needs (a question
// group waiting for its last answer, the requests the agent withdrew).
//
//	d, _ := dialect.New(dialect.ClaudeCode, dialect.Options{Dir: dir}) // where the process works
//	msgs, now, err := d.Decode(line)              // vendor line → canonical messages (+ an answer due at once)
//	reply := d.Answer(req, resp, reason)          // canonical answer → vendor line, or nil
//
// ExampleNew runs this on a real Claude Code permission request.
//
// Every canonical message keeps the vendor's line under "raw", so nothing is lost.
package dialect
