// Package hook speaks the hook formats of the agents agentmux supervises without
// starting them: what Claude Code and Codex send a hook (PreToolUse, PermissionRequest,
// SessionEnd; the two send the same fields) becomes an attached session's request
// (wire.AttachRequest), and agentmux's answer becomes the hook output that allows,
// denies or leaves the decision to the person at the agent, with the reason the model
// is shown, in each agent's form (Codex's PreToolUse can only deny). The console's
// /v1/hooks endpoints and `agentmux hook` use it; neither does I/O here.
package hook
