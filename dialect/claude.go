package dialect

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentmux/agentmux/protocol"
)

// ClaudeCode is the dialect of the `claude` CLI in stream-json mode (dialects.md).
const ClaudeCode = "claude-code"

// askUserQuestion is Claude Code's tool for asking the user; each of its questions
// becomes a canonical select question.
const askUserQuestion = "AskUserQuestion"

// claude translates Claude Code's stream-json and control protocol.
type claude struct {
	vendor
	approvals  map[string]json.RawMessage // request id → the tool's input, sent back on allow
	questions  map[string]*questionRef    // canonical question id → its group
	groups     map[string]*questionGroup  // request id → the AskUserQuestion it answers
	withdrawn  map[string]bool            // requests the CLI cancelled: answer nothing
	interrupts int
	// counted is the usage already reported of each model message, by its id: Claude
	// Code writes a message's usage again with each of its content blocks.
	counted map[string]claudeMessageUsage
	// conversation is the CLI's session id, from its system/init line.
	conversation string
}

// claudeMessageUsage is a model message's usage as the API reported it.
type claudeMessageUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	model                    string
}

type questionGroup struct {
	requestID string
	input     map[string]json.RawMessage
	texts     []string
	answers   map[string]string
}

type questionRef struct {
	group *questionGroup
	index int
}

func newClaude() *claude {
	return &claude{approvals: map[string]json.RawMessage{}, questions: map[string]*questionRef{},
		groups: map[string]*questionGroup{}, withdrawn: map[string]bool{}, counted: map[string]claudeMessageUsage{}}
}

func (c *claude) Args() []string {
	return []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose", "--permission-prompt-tool", "stdio"}
}

func (c *claude) Capabilities() []string { return []string{"interrupt", "message"} }

// Reusable: one process is one conversation.
func (c *claude) Reusable() bool { return false }

// SessionArgs resumes a conversation: --resume <id>, or --continue for "last".
func (c *claude) SessionArgs(resume string) []string {
	switch resume {
	case "":
		return nil
	case "last":
		return []string{"--continue"}
	}
	return []string{"--resume", resume}
}

func (c *claude) Prompt(p protocol.Prompt) []byte { return c.Message(promptText(p)) }

// Continue is one more user message: Claude Code goes on with the same conversation.
func (c *claude) Continue(p protocol.Prompt) []byte { return c.Message(p.Text) }

func (c *claude) Message(text string) []byte {
	return line(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": text}})
}

func (c *claude) Interrupt(string) []byte {
	c.interrupts++
	return line(map[string]any{"type": "control_request", "request_id": fmt.Sprintf("agentmux-interrupt-%d", c.interrupts),
		"request": map[string]any{"subtype": "interrupt"}})
}

// claudeLine is the part of a CLI line the dialect reads.
type claudeLine struct {
	Type      string          `json:"type"`
	Subtype   string          `json:"subtype"`
	SessionID string          `json:"session_id"`
	Model     string          `json:"model"`
	Version   string          `json:"claude_code_version"`
	RequestID string          `json:"request_id"`
	Request   json.RawMessage `json:"request"`
	Message   *struct {
		ID      string              `json:"id"`
		Model   string              `json:"model"`
		Content json.RawMessage     `json:"content"`
		Usage   *claudeMessageUsage `json:"usage"`
	} `json:"message"`
	IsError           bool            `json:"is_error"`
	Result            string          `json:"result"`
	NumTurns          int             `json:"num_turns"`
	TotalCostUSD      float64         `json:"total_cost_usd"`
	Usage             json.RawMessage `json:"usage"`
	PermissionDenials json.RawMessage `json:"permission_denials"`
	// ModelUsage is every model's tokens and cost in the run so far (not one turn's).
	ModelUsage map[string]claudeModelUsage `json:"modelUsage"`
}

// claudeModelUsage is one model's part of a result's modelUsage.
type claudeModelUsage struct {
	InputTokens              int64   `json:"inputTokens"`
	OutputTokens             int64   `json:"outputTokens"`
	CacheReadInputTokens     int64   `json:"cacheReadInputTokens"`
	CacheCreationInputTokens int64   `json:"cacheCreationInputTokens"`
	CostUSD                  float64 `json:"costUSD"`
}

type contentBlock struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Name    string          `json:"name"`
	Input   json.RawMessage `json:"input"`
	IsError bool            `json:"is_error"`
	Content json.RawMessage `json:"content"`
}

type canUseTool struct {
	Subtype     string          `json:"subtype"`
	ToolName    string          `json:"tool_name"`
	Input       json.RawMessage `json:"input"`
	Description string          `json:"description"`
	ToolUseID   string          `json:"tool_use_id"`
}

func (c *claude) Decode(raw []byte) ([]*protocol.Message, []byte, error) {
	msgs, err := c.decode(raw)
	return msgs, nil, err
}

func (c *claude) decode(raw []byte) ([]*protocol.Message, error) {
	raw = bytes.TrimSpace(raw)
	var l claudeLine
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, fmt.Errorf("claude-code: a line that is not JSON: %w", err)
	}
	one := func(fields map[string]any) ([]*protocol.Message, error) {
		m, err := canonical(fields, raw)
		if err != nil {
			return nil, err
		}
		return []*protocol.Message{m}, nil
	}
	if l.Type == "rate_limit_event" || l.Subtype == "api_retry" {
		if m, err := claudeLimit(&l, raw, time.Now()); m != nil || err != nil {
			return []*protocol.Message{m}, err
		}
	}
	switch l.Type {
	case "system":
		if l.Subtype == "init" {
			c.conversation = l.SessionID
			return one(map[string]any{"type": "progress", "message": fmt.Sprintf("claude-code %s started session %s with %s", l.Version, l.SessionID, l.Model), "session_id": l.SessionID})
		}
		return one(map[string]any{"type": "log", "message": "claude-code system " + l.Subtype})
	case "assistant":
		return c.assistant(&l, raw)
	case "user":
		return c.toolResults(&l, raw)
	case "result":
		usage, err := c.resultUsage(&l)
		if err != nil {
			return nil, err
		}
		var end []*protocol.Message
		if l.IsError {
			msg := l.Result
			if msg == "" {
				msg = "claude-code ended with " + l.Subtype
			}
			end, err = one(map[string]any{"type": "error", "message": msg, "session_id": l.SessionID, "subtype": l.Subtype})
		} else {
			end, err = one(map[string]any{"type": "result", "text": l.Result, "session_id": l.SessionID, "num_turns": l.NumTurns,
				"total_cost_usd": l.TotalCostUSD, "usage": l.Usage, "permission_denials": l.PermissionDenials})
		}
		return append(usage, end...), err
	case "control_request":
		return c.controlRequest(&l, raw)
	case "control_cancel_request":
		return c.withdraw(l.RequestID, raw), nil
	case "control_response":
		return one(map[string]any{"type": "log", "message": "claude-code acknowledged a control request"})
	}
	return one(map[string]any{"type": "claude." + l.Type})
}

// resultUsage is a usage line per model of a result's modelUsage, each the model's total
// so far; a result with a cost and no models' usage is one total of that cost. As
// modelUsage counts every call, a model counted live (messageUsage) that it does not
// name under the same name is set to nothing, so that no call counts twice.
func (c *claude) resultUsage(l *claudeLine) ([]*protocol.Message, error) {
	var out []*protocol.Message
	live := map[string]bool{}
	for _, u := range c.counted {
		live[u.model] = true
	}
	for _, model := range slices.Sorted(maps.Keys(live)) {
		if _, named := l.ModelUsage[model]; named || len(l.ModelUsage) == 0 {
			continue
		}
		m, err := canonical(map[string]any{"type": "usage", "model": model, "input_tokens": 0, "output_tokens": 0, "total": true}, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	for _, model := range slices.Sorted(maps.Keys(l.ModelUsage)) {
		u := l.ModelUsage[model]
		m, err := canonical(map[string]any{"type": "usage", "model": model, "input_tokens": u.InputTokens, "output_tokens": u.OutputTokens,
			"cache_read_tokens": u.CacheReadInputTokens, "cache_write_tokens": u.CacheCreationInputTokens, "cost_usd": u.CostUSD, "total": true}, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	if len(out) == 0 && l.TotalCostUSD > 0 {
		m, err := canonical(map[string]any{"type": "usage", "cost_usd": l.TotalCostUSD, "total": true}, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// assistant turns the model's content into partials (text) and progress (tools, thinking).
func (c *claude) assistant(l *claudeLine, raw []byte) ([]*protocol.Message, error) {
	var blocks []contentBlock
	if l.Message != nil {
		_ = json.Unmarshal(l.Message.Content, &blocks)
	}
	var out []*protocol.Message
	for _, b := range blocks {
		var fields map[string]any
		switch b.Type {
		case "text":
			fields = map[string]any{"type": "partial", "text": b.Text}
		case "tool_use":
			fields = map[string]any{"type": "progress", "message": "calls " + b.Name, "tool": b.Name, "input": b.Input}
		case "thinking":
			fields = map[string]any{"type": "progress", "message": "thinking"}
		default:
			continue
		}
		m, err := canonical(fields, raw)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	used, err := c.messageUsage(l)
	if err != nil || used == nil {
		return out, err
	}
	return append(out, used), nil
}

// messageUsage is what a model message used that was not reported yet, as a usage line
// of one call's tokens (its cost comes with the result): live, so a session's spend is
// known while it runs. Nil when the line adds nothing.
func (c *claude) messageUsage(l *claudeLine) (*protocol.Message, error) {
	if l.Message == nil || l.Message.Usage == nil || l.Message.ID == "" {
		return nil, nil
	}
	u, was := *l.Message.Usage, c.counted[l.Message.ID]
	d := claudeMessageUsage{InputTokens: max(u.InputTokens-was.InputTokens, 0), OutputTokens: max(u.OutputTokens-was.OutputTokens, 0),
		CacheReadInputTokens: max(u.CacheReadInputTokens-was.CacheReadInputTokens, 0), CacheCreationInputTokens: max(u.CacheCreationInputTokens-was.CacheCreationInputTokens, 0)}
	c.counted[l.Message.ID] = claudeMessageUsage{InputTokens: max(u.InputTokens, was.InputTokens), OutputTokens: max(u.OutputTokens, was.OutputTokens),
		CacheReadInputTokens: max(u.CacheReadInputTokens, was.CacheReadInputTokens), CacheCreationInputTokens: max(u.CacheCreationInputTokens, was.CacheCreationInputTokens),
		model: l.Message.Model}
	if d.InputTokens+d.OutputTokens+d.CacheReadInputTokens+d.CacheCreationInputTokens == 0 {
		return nil, nil
	}
	return canonical(map[string]any{"type": "usage", "model": l.Message.Model, "input_tokens": d.InputTokens, "output_tokens": d.OutputTokens,
		"cache_read_tokens": d.CacheReadInputTokens, "cache_write_tokens": d.CacheCreationInputTokens, "message_id": l.Message.ID}, nil)
}

// toolResults reports finished tools as progress.
func (c *claude) toolResults(l *claudeLine, raw []byte) ([]*protocol.Message, error) {
	var blocks []contentBlock
	if l.Message != nil {
		_ = json.Unmarshal(l.Message.Content, &blocks)
	}
	var out []*protocol.Message
	for _, b := range blocks {
		if b.Type != "tool_result" {
			continue
		}
		msg := "tool finished"
		if b.IsError {
			msg = "tool failed"
		}
		m, err := canonical(map[string]any{"type": "progress", "message": msg, "is_error": b.IsError}, raw)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	if len(out) > 0 { // a safe point: what the tools did is in
		out = append(out, checkpointMark(c.conversation)...)
	}
	return out, nil
}

func (c *claude) controlRequest(l *claudeLine, raw []byte) ([]*protocol.Message, error) {
	var req canUseTool
	if err := json.Unmarshal(l.Request, &req); err != nil || req.Subtype != "can_use_tool" || l.RequestID == "" {
		m, err := canonical(map[string]any{"type": "claude.control_request"}, raw)
		if err != nil {
			return nil, err
		}
		return []*protocol.Message{m}, nil
	}
	if req.ToolName == askUserQuestion {
		return c.askUserQuestion(l.RequestID, req.Input, raw)
	}
	c.approvals[l.RequestID] = req.Input
	m, err := canonical(map[string]any{"type": "approval", "id": l.RequestID, "description": describeTool(&req),
		"tool": req.ToolName, "input": req.Input, "tool_use_id": req.ToolUseID}, raw)
	if err != nil {
		return nil, err
	}
	return []*protocol.Message{m}, nil
}

// describeTool is what a supervisor reads of a tool call: the tool and its input.
func describeTool(r *canUseTool) string { return DescribeTool(r.ToolName, r.Input, r.Description) }

// DescribeTool is what a supervisor reads of a call of Claude Code's tool name with its
// input, and the description Claude Code gave it: "Bash: npm test (Run the tests)",
// "Edit: /src/a.go". Routes match it; Claude Code's hooks describe calls the same way.
func DescribeTool(name string, input json.RawMessage, description string) string {
	var fields map[string]any
	_ = json.Unmarshal(input, &fields)
	var b strings.Builder
	b.WriteString(name)
	if cmd, ok := fields["command"].(string); ok {
		fmt.Fprintf(&b, ": %s", cmd)
	} else if path, ok := fields["file_path"].(string); ok {
		fmt.Fprintf(&b, ": %s", path)
	} else if len(input) > 0 {
		fmt.Fprintf(&b, " %s", input)
	}
	if description != "" {
		fmt.Fprintf(&b, " (%s)", description)
	}
	return b.String()
}

// askUserQuestion makes one canonical select question per entry of the tool's input.
func (c *claude) askUserQuestion(requestID string, input json.RawMessage, raw []byte) ([]*protocol.Message, error) {
	var in struct {
		Questions []struct {
			Question    string `json:"question"`
			Header      string `json:"header"`
			MultiSelect bool   `json:"multiSelect"`
			Options     []struct {
				Label       string `json:"label"`
				Description string `json:"description"`
			} `json:"options"`
		} `json:"questions"`
	}
	if err := json.Unmarshal(input, &in); err != nil || len(in.Questions) == 0 {
		return nil, fmt.Errorf("claude-code: AskUserQuestion without questions: %s", input)
	}
	g := &questionGroup{requestID: requestID, answers: map[string]string{}}
	_ = json.Unmarshal(input, &g.input)
	c.groups[requestID] = g
	var out []*protocol.Message
	for i, q := range in.Questions {
		id := fmt.Sprintf("%s#%d", requestID, i)
		options := make([]map[string]string, len(q.Options))
		for j, o := range q.Options {
			options[j] = map[string]string{"value": o.Label, "description": o.Description}
		}
		m, err := canonical(map[string]any{"type": "question", "id": id, "kind": "select", "multi": q.MultiSelect,
			"question": q.Question, "context": q.Header, "options": options}, raw)
		if err != nil {
			return nil, err
		}
		g.texts = append(g.texts, q.Question)
		c.questions[id] = &questionRef{group: g, index: i}
		out = append(out, m)
	}
	return out, nil
}

// withdraw marks a request (and its questions) cancelled by the CLI.
func (c *claude) withdraw(requestID string, raw []byte) []*protocol.Message {
	ids := []string{requestID}
	if g, ok := c.groups[requestID]; ok {
		ids = ids[:0]
		for i := range g.texts {
			ids = append(ids, fmt.Sprintf("%s#%d", requestID, i))
		}
	}
	var out []*protocol.Message
	for _, id := range ids {
		c.withdrawn[id] = true
		out = append(out, &protocol.Message{Type: protocol.TypeWithdrawn, Name: "control_cancel_request", ID: id, Raw: bytes.Clone(raw)})
	}
	return out
}

func (c *claude) Answer(req *protocol.Message, r protocol.Response, reason string) []byte {
	if c.withdrawn[r.ID] {
		delete(c.withdrawn, r.ID)
		return nil
	}
	if ref, ok := c.questions[r.ID]; ok {
		delete(c.questions, r.ID)
		return c.answerQuestion(ref, r)
	}
	input, ok := c.approvals[r.ID]
	if !ok {
		return nil
	}
	delete(c.approvals, r.ID)
	var v string
	_ = json.Unmarshal(r.Value, &v)
	if v == "yes" && r.Outcome != protocol.OutcomeCancelled {
		return allow(r.ID, input)
	}
	msg := reason
	switch r.Outcome {
	case protocol.OutcomeTimedOut:
		msg = "No answer came within the deadline, so this is denied by default (nobody decided against it)."
	case protocol.OutcomeCancelled:
		msg = "The session is ending; the tool was not run."
	default:
		if msg == "" {
			msg = "Denied by the supervisor."
		}
	}
	return deny(r.ID, msg)
}

// answerQuestion records one answer of an AskUserQuestion; with the last one, the whole
// group is answered.
func (c *claude) answerQuestion(ref *questionRef, r protocol.Response) []byte {
	g := ref.group
	g.answers[g.texts[ref.index]] = answerText(r.Value)
	if len(g.answers) < len(g.texts) {
		return nil
	}
	delete(c.groups, g.requestID)
	answers, _ := json.Marshal(g.answers)
	input := g.input
	if input == nil {
		input = map[string]json.RawMessage{}
	}
	input["answers"] = answers
	updated, _ := json.Marshal(input)
	return allow(g.requestID, updated)
}

// answerText is an answer as AskUserQuestion reports it: a label, or labels joined.
func answerText(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	var list []string
	if json.Unmarshal(v, &list) == nil {
		return strings.Join(list, ", ")
	}
	return string(v)
}

func allow(requestID string, input json.RawMessage) []byte {
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	return line(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success", "request_id": requestID,
		"response": map[string]any{"behavior": "allow", "updatedInput": input}}})
}

func deny(requestID, message string) []byte {
	return line(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success", "request_id": requestID,
		"response": map[string]any{"behavior": "deny", "message": message}}})
}
