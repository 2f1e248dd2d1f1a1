package hook

import "encoding/json"

// CodexOutput is the hook output that tells Codex the verdict for event. Codex takes
// less than Claude Code: its PreToolUse can only deny (an allow or ask there makes the
// hook fail, and the call goes on to Codex's own approval), and its PermissionRequest
// allows or denies, or says nothing so that the person at Codex is asked. So an allow
// at PreToolUse is no output: the call goes on to Codex's sandbox and approval policy,
// and to the PermissionRequest hook when Codex asks.
func CodexOutput(event string, v Verdict) []byte {
	var out any = map[string]any{}
	switch {
	case event == PreToolUse && v.Decision == Deny:
		out = map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": PreToolUse,
			"permissionDecision": Deny, "permissionDecisionReason": v.Reason}}
	case event == PermissionRequest && v.Decision == Allow:
		out = map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": PermissionRequest,
			"decision": map[string]any{"behavior": Allow}}}
	case event == PermissionRequest && v.Decision == Deny:
		out = map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": PermissionRequest,
			"decision": map[string]any{"behavior": Deny, "message": v.Reason}}}
	case v.Decision == Ask:
		out = map[string]any{"systemMessage": v.Reason}
	}
	b, _ := json.Marshal(out)
	return b
}
