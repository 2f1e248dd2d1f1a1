package hook

import "encoding/json"

// ClaudeOutput is the hook output that tells Claude Code the verdict for event, in the
// form each event takes: PreToolUse's permissionDecision, PermissionRequest's decision
// (ask: none, so Claude Code prompts), nothing for the rest.
func ClaudeOutput(event string, v Verdict) []byte {
	var out any
	switch event {
	case PreToolUse:
		out = map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": PreToolUse,
			"permissionDecision": v.Decision, "permissionDecisionReason": v.Reason}}
	case PermissionRequest:
		switch v.Decision {
		case Allow:
			out = map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": PermissionRequest,
				"decision": map[string]any{"behavior": "allow"}}}
		case Deny:
			out = map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": PermissionRequest,
				"decision": map[string]any{"behavior": "deny", "message": v.Reason}}}
		default:
			out = map[string]any{"systemMessage": v.Reason}
		}
	default:
		out = map[string]any{}
	}
	b, _ := json.Marshal(out)
	return b
}
