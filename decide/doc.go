// Package decide holds the decision strategies that answer agents' questions, approvals
// and tool calls: rule (regular expressions over the request text), static (one answer
// per request type), llm (a model through the OpenAI or Anthropic SDK, answering in the
// request's shape), command (a program per request) and human (a person, through a
// Pending store), with escalation, tools and fallback chains around them. It knows
// nothing of actors or NATS: a Decider takes a Request and returns a Decision, so
// strategies are tested as plain functions and any transport can drive them; what needs
// NATS (the pending store, served tools) comes in through Deps.
//
//	d, err := decide.New(manifest.Supervisors["security"], decide.Deps{Manifest: manifest})
//	dec, err := d.Decide(ctx, &decide.Request{Type: "question", Text: "Which auth scheme?"})
//	// dec.Value == "Use RS256 with rotating keys", dec.Decider == "rule:security"
//
// Deciders are safe for concurrent use; the supervisor actor runs up to its configured
// concurrency of decisions at once.
package decide
