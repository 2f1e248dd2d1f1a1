package hook

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/dialect"
	"github.com/agentmux/agentmux/wire"
)

// Claude Code's hook events agentmux answers.
const (
	PreToolUse        = "PreToolUse"
	PermissionRequest = "PermissionRequest"
	SessionEnd        = "SessionEnd"
)

// ClaudeEvent is the event `agentmux hook install claude-code --events` names by flag,
// e.g. "pre-tool-use" for PreToolUse.
func ClaudeEvent(flag string) (string, bool) {
	switch flag {
	case "pre-tool-use":
		return PreToolUse, true
	case "permission-request":
		return PermissionRequest, true
	case "session-end":
		return SessionEnd, true
	}
	return "", false
}

// ClaudeInput is what Claude Code sends a hook on stdin, or an http hook in its body.
type ClaudeInput struct {
	SessionID      string          `json:"session_id"`
	TranscriptPath string          `json:"transcript_path"`
	Cwd            string          `json:"cwd"`
	PermissionMode string          `json:"permission_mode"`
	HookEventName  string          `json:"hook_event_name"`
	ToolName       string          `json:"tool_name"`
	ToolInput      json.RawMessage `json:"tool_input"`
	ToolUseID      string          `json:"tool_use_id"`
	Reason         string          `json:"reason"` // SessionEnd's
}

// ErrNotDecided is a hook input agentmux has nothing to decide for: another event.
var ErrNotDecided = errors.New("hook: not an event agentmux decides")

// ClaudeRequest is the request a Claude Code hook input asks, as user: an approval of
// the tool call (PreToolUse, PermissionRequest) in the words routes match ("Bash: npm
// test"), or the session's end (SessionEnd).
func ClaudeRequest(body []byte, user string) (*wire.AttachRequest, error) {
	var in ClaudeInput
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("hook: Claude Code's input is not JSON: %w", err)
	}
	if in.SessionID == "" {
		return nil, errors.New("hook: Claude Code's input has no session_id")
	}
	req := &wire.AttachRequest{Session: in.SessionID, User: user, Cwd: in.Cwd, Transcript: in.TranscriptPath, Event: in.HookEventName}
	switch in.HookEventName {
	case SessionEnd:
		req.End = true
		return req, nil
	case PreToolUse, PermissionRequest:
	default:
		return nil, fmt.Errorf("%w: %q; install it for %s, %s and %s", ErrNotDecided, in.HookEventName, PreToolUse, PermissionRequest, SessionEnd)
	}
	if in.ToolName == "" {
		return nil, fmt.Errorf("hook: Claude Code's %s input has no tool_name", in.HookEventName)
	}
	input := in.ToolInput
	if len(input) == 0 || string(input) == "null" {
		input = json.RawMessage("{}")
	}
	var described struct {
		Description string `json:"description"`
	}
	_ = json.Unmarshal(input, &described)
	approval := map[string]any{"type": "approval", "description": dialect.DescribeTool(in.ToolName, input, described.Description),
		"tool": in.ToolName, "input": input}
	if in.ToolUseID != "" {
		approval["id"], approval["tool_use_id"] = in.ToolUseID, in.ToolUseID
	}
	var err error
	if req.Request, err = json.Marshal(approval); err != nil {
		return nil, fmt.Errorf("hook: Claude Code's tool_input: %w", err)
	}
	return req, nil
}

// Verdict is what a hook tells its agent: allow, deny, or ask (the agent's own prompt,
// to the person at it), and why.
type Verdict struct {
	Decision string // "allow", "deny" or "ask"
	Reason   string
}

// Decisions of a Verdict.
const (
	Allow = "allow"
	Deny  = "deny"
	Ask   = "ask"
)

// VerdictOf is what agentmux's answer to an approval means for the hook: "yes" allows,
// anything else denies, each with the reason the model (and the person) are shown.
func VerdictOf(r *wire.AttachReply) Verdict {
	var v string
	_ = json.Unmarshal(r.Value, &v)
	why := r.Reason
	switch {
	case r.Outcome == "timed_out":
		why = "no answer came within the deadline, so agentmux gave the default"
	case why == "":
		why = "decided by agentmux's supervisors"
	}
	if v == "yes" && r.Outcome != "cancelled" {
		return Verdict{Decision: Allow, Reason: "agentmux approved this: " + why}
	}
	return Verdict{Decision: Deny, Reason: "agentmux denied this: " + why + " (session " + r.Session + ")"}
}

// Unreachable is the verdict when agentmux cannot decide: the host's default for
// "deny" (fail closed), or the agent's own prompt for "ask", saying why.
func Unreachable(mode, why string) Verdict {
	if mode == config.UnreachableAsk {
		return Verdict{Decision: Ask, Reason: "agentmux could not decide (" + why + "), so you are asked instead"}
	}
	return Verdict{Decision: Deny, Reason: "agentmux could not decide (" + why + "), so this is denied: its supervisors must approve it"}
}

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
