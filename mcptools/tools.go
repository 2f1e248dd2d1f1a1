package mcptools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/hook"
	"github.com/agentmux/agentmux/wire"
)

// The tools' names; Claude Code calls the first mcp__<server>__approve.
const (
	Approve = "approve"
	Ask     = "ask"
)

// ApproveInput is what Claude Code gives its permission prompt tool.
type ApproveInput struct {
	ToolName  string         `json:"tool_name" jsonschema:"the tool the agent asks to use"`
	Input     map[string]any `json:"input" jsonschema:"the tool's input"`
	ToolUseID string         `json:"tool_use_id,omitempty" jsonschema:"the tool call's id"`
}

// Permission is what the permission prompt tool answers, as the JSON text Claude Code
// reads: allow (with the input unchanged) or deny, with the reason the model is shown.
type Permission struct {
	Behavior     string         `json:"behavior"`
	UpdatedInput map[string]any `json:"updatedInput,omitempty"`
	Message      string         `json:"message,omitempty"`
}

// AskInput is a question an agent puts to the fleet.
type AskInput struct {
	Question string   `json:"question" jsonschema:"the question, as a person or a supervisor should read it"`
	Options  []string `json:"options,omitempty" jsonschema:"the answers to choose from, if the question has a fixed set"`
	Context  string   `json:"context,omitempty" jsonschema:"what the one answering should know"`
}

// Answer is the fleet's answer to an ask.
type Answer struct {
	Answer  any    `json:"answer" jsonschema:"the answer: one of the options, or text"`
	Outcome string `json:"outcome,omitempty" jsonschema:"answered, or timed_out when the deadline gave the default"`
	Reason  string `json:"reason,omitempty" jsonschema:"why, when the one answering said"`
}

func approveTool() *mcp.Tool {
	return &mcp.Tool{Name: Approve, Description: "Ask agentmux's supervisors whether a tool call may run (Claude Code's --permission-prompt-tool). Waits for their answer, up to the source's deadline."}
}

func askTool() *mcp.Tool {
	return &mcp.Tool{Name: Ask, Description: "Put a question to agentmux's supervisors (rules, a model, or a person) and wait for the answer, up to the source's deadline. Use it when you would otherwise ask the user."}
}

// permissionResult is the tool result that carries p as Claude Code reads it: one text
// content holding p's JSON.
func permissionResult(p Permission) *mcp.CallToolResult {
	b, _ := json.Marshal(p)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
}

// permissionOf is what a hook verdict means for the permission prompt tool. It cannot
// leave a call to the person: in Claude Code's print mode, where the tool is used,
// there is no one to ask, so "ask" denies, saying why.
func permissionOf(v hook.Verdict, input map[string]any) Permission {
	if v.Decision == hook.Allow {
		if input == nil {
			input = map[string]any{}
		}
		return Permission{Behavior: "allow", UpdatedInput: input}
	}
	return Permission{Behavior: "deny", Message: v.Reason}
}

// unreachable is the verdict when agentmux cannot decide: the source's fallback, where
// "ask" is a deny that says no person could be asked here.
func unreachable(mode, why string) hook.Verdict {
	v := hook.Unreachable(mode, why)
	if v.Decision == hook.Ask {
		v = hook.Verdict{Decision: hook.Deny, Reason: "agentmux could not decide (" + why + "), and a permission prompt tool has no one to ask, so this is denied"}
	}
	return v
}

// approvalRequest is the attached request of an approve call: the approval Claude
// Code's PermissionRequest hook would ask, in the words routes match.
func approvalRequest(session, user string, in ApproveInput) (*wire.AttachRequest, error) {
	if in.ToolName == "" {
		return nil, fmt.Errorf("mcptools: approve needs tool_name")
	}
	body, err := json.Marshal(map[string]any{"session_id": session, "hook_event_name": hook.PermissionRequest,
		"tool_name": in.ToolName, "tool_input": in.Input, "tool_use_id": in.ToolUseID})
	if err != nil {
		return nil, err
	}
	return hook.Request(config.AttachedClaudeCode, body, user)
}

// questionRequest is the attached request of an ask call: a question of agentmux's
// protocol, a select among its options when it has some.
func questionRequest(session, user string, in AskInput) (*wire.AttachRequest, error) {
	if strings.TrimSpace(in.Question) == "" {
		return nil, fmt.Errorf("mcptools: ask needs a question")
	}
	q := map[string]any{"type": "question", "question": in.Question}
	if in.Context != "" {
		q["context"] = in.Context
	}
	if len(in.Options) > 0 {
		options := make([]map[string]string, len(in.Options))
		for i, o := range in.Options {
			options[i] = map[string]string{"value": o}
		}
		q["kind"], q["options"] = "select", options
	}
	raw, err := json.Marshal(q)
	if err != nil {
		return nil, err
	}
	return &wire.AttachRequest{Session: session, User: user, Event: Ask, Request: raw}, nil
}

// Asker puts an attached request to the fleet and waits for its answer.
type Asker func(ctx context.Context, req *wire.AttachRequest) (*wire.AttachReply, error)
