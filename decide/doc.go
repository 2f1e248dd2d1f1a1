// Package decide holds the decision strategies that answer agents' questions, approvals
// and tool calls: rule (regular expressions over the request text) and static (one
// answer per request type). It knows nothing of actors or NATS: a Decider takes a
// Request and returns a Decision, so strategies are tested as plain functions and any
// transport can drive them.
//
//	d, err := decide.New(manifest.Supervisors["security"])
//	dec, err := d.Decide(ctx, &decide.Request{Type: "question", Text: "Which auth scheme?"})
//	// dec.Value == "Use RS256 with rotating keys", dec.Decider == "rule:security"
//
// Deciders are safe for concurrent use; the supervisor actor runs up to its configured
// concurrency of decisions at once.
package decide
