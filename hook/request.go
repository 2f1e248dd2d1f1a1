package hook

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/dialect"
	"github.com/agentmux/agentmux/wire"
)

// The hook events agentmux answers, the same in Claude Code and Codex.
const (
	PreToolUse        = "PreToolUse"
	PermissionRequest = "PermissionRequest"
	SessionEnd        = "SessionEnd"
)

// Event is the event `agentmux hook install --events` names by flag, e.g.
// "pre-tool-use" for PreToolUse.
func Event(flag string) (string, bool) {
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

// Input is what Claude Code or Codex sends a hook on stdin (or Claude Code's http hook
// in its body): the two agents' fields agentmux reads are the same.
type Input struct {
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

// Request is the request the hook input of an agent of agentDialect (config.AttachedClaudeCode
// or AttachedCodex) asks, as user: an approval of the tool call (PreToolUse,
// PermissionRequest) in the words routes match ("Bash: npm test"), or the session's end
// (SessionEnd).
func Request(agentDialect string, body []byte, user string) (*wire.AttachRequest, error) {
	agent := config.AttachedAgent(agentDialect)
	var in Input
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("hook: %s's input is not JSON: %w", agent, err)
	}
	if in.SessionID == "" {
		return nil, fmt.Errorf("hook: %s's input has no session_id", agent)
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
		return nil, fmt.Errorf("hook: %s's %s input has no tool_name", agent, in.HookEventName)
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
		return nil, fmt.Errorf("hook: %s's tool_input: %w", agent, err)
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

// VerdictFor is what the fleet's reply to an approval means for a hook, or, when err
// kept it from coming or a node could not take it, fallback's verdict saying why: a
// refusal (another user's session) denies, anything else answered is VerdictOf.
func VerdictFor(r *wire.AttachReply, err error, fallback func(why string) Verdict) Verdict {
	switch {
	case err != nil:
		return fallback(err.Error())
	case r.Code == wire.AttachForbidden:
		return Verdict{Decision: Deny, Reason: "agentmux refused this: " + r.Error}
	case r.Code != "":
		return fallback(r.Error)
	}
	return VerdictOf(r)
}

// Unreachable is the verdict when agentmux cannot decide: the host's default for
// "deny" (fail closed), or the agent's own prompt for "ask", saying why.
func Unreachable(mode, why string) Verdict {
	if mode == config.UnreachableAsk {
		return Verdict{Decision: Ask, Reason: "agentmux could not decide (" + why + "), so you are asked instead"}
	}
	return Verdict{Decision: Deny, Reason: "agentmux could not decide (" + why + "), so this is denied: its supervisors must approve it"}
}

// Output is the hook output that tells an agent of dialect the verdict for event.
func Output(dialect, event string, v Verdict) []byte {
	if dialect == config.AttachedCodex {
		return CodexOutput(event, v)
	}
	return ClaudeOutput(event, v)
}
