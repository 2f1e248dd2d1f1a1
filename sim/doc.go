// Package sim is the scripted agent behind `agentmux sim`: a process that speaks the
// native protocol and follows a script — progress, partials, typed questions, approvals,
// tool calls, unknown types, garbage and huge lines, sleeps, crashes, hangs and
// grandchildren that hold stdout — so the demo, the tests and the load generator drive
// the runtime with real processes on real pipes.
//
// A session's script comes from, in order: the Options' fixed Script, the prompt text
// when it is a JSON script ({"steps": [...]}), or the Options' Generate flags. The
// session's result carries every answer the agent received, so a test can assert what
// the agent saw:
//
//	{"type":"result","text":"done","answers":{"q1":{"value":true,"outcome":"answered"}}}
//
// Run serves sessions one after another until stdin closes. It uses one goroutine to
// read stdin besides the caller's.
package sim
