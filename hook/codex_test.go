package hook

import (
	"encoding/json"
	"testing"
)

// What Codex is told for each verdict: its PreToolUse takes only a deny (anything else
// there makes the hook fail), and ask leaves the decision to Codex's own approval.
func TestCodexOutput(t *testing.T) {
	deny, allow, ask := Verdict{Decision: Deny, Reason: "rule"}, Verdict{Decision: Allow, Reason: "ok"}, Verdict{Decision: Ask, Reason: "down"}
	for _, c := range []struct {
		event string
		v     Verdict
		want  string
	}{
		{PreToolUse, deny, `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"rule"}}`},
		{PreToolUse, allow, `{}`},
		{PreToolUse, ask, `{"systemMessage":"down"}`},
		{PermissionRequest, allow, `{"hookSpecificOutput":{"decision":{"behavior":"allow"},"hookEventName":"PermissionRequest"}}`},
		{PermissionRequest, deny, `{"hookSpecificOutput":{"decision":{"behavior":"deny","message":"rule"},"hookEventName":"PermissionRequest"}}`},
		{PermissionRequest, ask, `{"systemMessage":"down"}`},
		{SessionEnd, Verdict{}, `{}`},
	} {
		got := CodexOutput(c.event, c.v)
		if !json.Valid(got) || string(got) != c.want {
			t.Errorf("%s %s: %s; want %s", c.event, c.v.Decision, got, c.want)
		}
	}
}
