// Package agenttest is what the tests of real agent CLIs share: the pinned CLIs from
// npm, installed into .ci/agents when missing (never globally), and the scripted
// Anthropic Messages and OpenAI Responses APIs served over HTTP, so the CLI's own
// client code runs.
package agenttest
