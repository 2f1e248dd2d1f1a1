// Package api serves agentmux's HTTP API under /v1: what the CLI does over the bus,
// for CI jobs, webhooks and agents' hooks that have no NATS client. It lists sessions
// and the requests waiting for people, answers them, searches the audit, streams
// events, queues tasks, and decides agents' hooks (Claude Code's and Codex's) and MCP
// tools in the fleet. /v1/openapi.json describes it, and the tests check every call
// against it.
//
// A call carries a bearer token of [[api.tokens]], whose role (operator, viewer or
// hook) says what it may do, or comes from a person signed in to the console's page,
// which mounts the API beside it and shares its view (Page). Answers go through Give,
// which the page uses too: an answer the bus refuses ends at once with the refusal
// (Refused), not at its time-out.
//
//	a, err := api.New(api.Config{Conn: nc, JS: js, Tokens: tokens, Page: page, Allow: allow, Log: log})
//	a.Routes(mux)
package api
