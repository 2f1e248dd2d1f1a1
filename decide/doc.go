// Package decide holds the decision strategies that answer agents' questions, approvals
// and tool calls: rule (regular expressions over the request text), static (one answer
// per request type), llm (a model through the OpenAI or Anthropic SDK, answering in the
// request's shape), command (a program per request) and human (a person, through a
// Pending store), with escalation, tools and fallback chains around them. It spawns no
// actor and opens no connection: a Decider takes a Request and returns a Decision, so
// strategies are tested as plain functions; what needs NATS (the pending store, the llm
// memory bucket, served tools) comes in through Deps. RequestOf and Decision.Reply are
// the one conversion between bus's Ask and Reply and these types.
//
//	d, err := decide.New(manifest.Supervisors["security"], decide.Deps{Manifest: manifest})
//	dec, err := d.Decide(ctx, &decide.Request{Type: "question", Text: "Which auth scheme?"})
//	// dec.Value == "Use RS256 with rotating keys", dec.Decider == "rule:security"
//
// Deciders are safe for concurrent use; the supervisor actor runs up to its configured
// concurrency of decisions at once.
package decide
