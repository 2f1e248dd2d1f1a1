// Package mcptools is agentmux's MCP server: an approve tool for Claude Code's
// --permission-prompt-tool (mcp__agentmux__approve) and an ask tool any MCP-capable
// agent calls to put a question to the fleet's supervisors. Each MCP session is an
// attached session of its own; each call waits as long as the source's deadline says.
//
// The console serves the tools over streamable HTTP (NewServer, deciding through the
// bus); `agentmux mcp` serves them over stdio for an agent that starts its MCP servers
// as processes (NewProxy, forwarding each call to the console's, with the source's
// fallback when the console cannot be reached; Stdio, which still answers a call in
// flight when stdin ends).
package mcptools
