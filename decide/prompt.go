package decide

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/protocol"
	"github.com/agentmux/agentmux/wire"
)

// instructions open every system prompt: what the model is for and how it answers.
const instructions = `You supervise an autonomous coding agent on behalf of its team. The agent stopped to ask a question or to request approval for an action. Decide as a careful senior engineer would: answer questions so the work can go on, approve actions that are safe and in scope, deny anything destructive, irreversible, out of scope or unclear. Rate the risk of what is asked (low, medium, high, critical). Reply with one JSON object that follows the given schema, and nothing else.`

// render describes a request to the model.
func render(r *Request, m *protocol.Message) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Agent host: %s\nSession: %s\n", r.Host, r.Session)
	switch m.Type {
	case protocol.TypeQuestion:
		fmt.Fprintf(&b, "The agent asks a question (kind: %s", m.EffectiveKind())
		if m.Multi {
			b.WriteString(", several options may be chosen")
		}
		fmt.Fprintf(&b, "):\n%s\n", m.Question)
	case protocol.TypeApproval:
		fmt.Fprintf(&b, "The agent requests approval for:\n%s\n", m.Description)
		if m.RiskLevel != "" {
			fmt.Fprintf(&b, "The agent rates its risk as: %s\n", m.RiskLevel)
		}
	case protocol.TypeToolCall:
		fmt.Fprintf(&b, "The agent called the tool %q with arguments %s\n", m.Tool, compact(m.Args))
	case protocol.TypeBudget:
		fmt.Fprintf(&b, "The session reached its budget and is paused:\n%s\nApprove to raise its budget so it goes on; deny to end it.\n", m.Description)
	}
	if m.Context != "" {
		fmt.Fprintf(&b, "Context:\n%s\n", m.Context)
	}
	if len(m.Options) > 0 {
		b.WriteString("Options:\n")
		for _, o := range m.Options {
			fmt.Fprintf(&b, "- %q", o.Value)
			if o.Label != "" && o.Label != o.Value {
				fmt.Fprintf(&b, " (%s)", o.Label)
			}
			if o.Description != "" {
				fmt.Fprintf(&b, ": %s", o.Description)
			}
			b.WriteByte('\n')
		}
	}
	for _, c := range r.Conflicts {
		verb := "is about to change"
		if c.Kind == wire.TouchChanged {
			verb = "has changed"
		}
		fmt.Fprintf(&b, "Beware: session %s (host %s, branch %s) %s %s, %s ago, on the same repository.\n", c.Session, c.Host, c.Branch, verb,
			strings.Join(c.Paths, ", "), time.Since(time.UnixMilli(c.Time)).Round(time.Second))
	}
	if len(r.Default) > 0 && string(r.Default) != `""` {
		fmt.Fprintf(&b, "If you cannot decide, the answer will be the default: %s\n", compact(r.Default))
	}
	return b.String()
}

// answerSchema is the JSON Schema of the object the model must reply with.
func answerSchema(m *protocol.Message) map[string]any {
	risk := map[string]any{"type": "string", "enum": config.RiskLevels()}
	reason := map[string]any{"type": "string", "description": "one or two sentences on why"}
	object := func(key string, value any) map[string]any {
		return map[string]any{
			"type":                 "object",
			"properties":           map[string]any{key: value, "reason": reason, "risk_level": risk},
			"required":             []string{key, "reason", "risk_level"},
			"additionalProperties": false,
		}
	}
	if m.Type == protocol.TypeApproval || m.Type == protocol.TypeBudget {
		if len(m.Options) > 0 {
			return object("decision", map[string]any{"type": "string", "enum": optionValues(m)})
		}
		return object("decision", map[string]any{"type": "string", "enum": []string{"approve", "deny"}})
	}
	var answer any
	switch m.EffectiveKind() {
	case protocol.KindConfirm:
		answer = map[string]any{"type": "boolean"}
	case protocol.KindSelect:
		one := map[string]any{"type": "string", "enum": optionValues(m)}
		answer = one
		if m.Multi {
			answer = map[string]any{"type": "array", "items": one}
		}
	case protocol.KindCustom:
		answer = schemaOf(m.Schema)
	default:
		answer = map[string]any{"type": "string"}
		if len(m.Schema) > 0 {
			answer = schemaOf(m.Schema)
		}
	}
	return object("answer", answer)
}

// takesText reports whether m is a question whose answer is any string: kind prompt
// (or a free-form kind) without a schema.
func takesText(m *protocol.Message) bool {
	return m.Type == protocol.TypeQuestion && m.EffectiveKind() == protocol.KindPrompt && !protocol.HasSchema(m.Schema)
}

// postProcessSchema is the reply shape for reworking a tool result.
func postProcessSchema() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"answer": map[string]any{"description": "the value the agent receives as the tool's result"},
			"reason": map[string]any{"type": "string"},
		},
		"required": []string{"answer", "reason"},
	}
}

func optionValues(m *protocol.Message) []string {
	out := make([]string, len(m.Options))
	for i, o := range m.Options {
		out[i] = o.Value
	}
	return out
}

func schemaOf(raw json.RawMessage) any {
	var s any
	if json.Unmarshal(raw, &s) != nil || s == nil {
		return map[string]any{}
	}
	return s
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// modelReply is what the model answers, loosely: a field it leaves out stays zero.
type modelReply struct {
	Answer    json.RawMessage `json:"answer"`
	Decision  string          `json:"decision"`
	Reason    string          `json:"reason"`
	RiskLevel string          `json:"risk_level"`
}

// parseReply reads the JSON object in a model's text, tolerating code fences and prose
// around it.
func parseReply(text string) (*modelReply, error) {
	start, end := strings.IndexByte(text, '{'), strings.LastIndexByte(text, '}')
	if start < 0 || end < start {
		return nil, fmt.Errorf("no JSON object in the model's reply %q", clip(text))
	}
	var r modelReply
	if err := json.Unmarshal([]byte(text[start:end+1]), &r); err != nil {
		return nil, fmt.Errorf("the model's reply is not the JSON asked for (%v): %q", err, clip(text))
	}
	return &r, nil
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
