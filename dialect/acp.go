package dialect

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/agentmux/agentmux/protocol"
)

// ACP is the dialect of Agent Client Protocol agents (JSON-RPC 2.0 over stdio); the
// runtime is the ACP client.
const ACP = "acp"

// JSON-RPC errors the client returns for methods it does not offer.
const rpcMethodNotFound = -32601

// acp translates one ACP agent process: initialize once, then for each runtime session
// a session/new and a session/prompt whose response ends the session.
type acp struct {
	vendor
	rpcClient
	cwd         string // the sessions' working directory
	initialized bool
	queued      string         // a prompt waiting for initialize or session/new
	trace       map[string]any // the session's trace context, in each session/prompt's _meta
	sessionID   string         // the current ACP session
	model       string         // the current session's model, for its usage
	lastSession string         // the session of the last turn, for Continue
	permissions map[string]*acpPermission

	// keeps: the agent keeps its conversations where a node can carry them (claudeACP),
	// so its safe points are marked with a checkpoint of conversation, the current
	// session's (kept after its result).
	keeps        bool
	conversation string
	resumed      acpResume
}

type acpPermission struct {
	rpcID       json.RawMessage
	options     []acpOption
	elicitation bool         // a form: answered {action, content}
	questions   *acpQuestion // one of a Qwen Code question's, answered together
}

// acpQuestion is Qwen Code's ask_user_question over ACP: a permission request whose
// toolCall._meta carries the questions (qwenInteractionKind "user_question"), answered
// by its allow-once option with "answers" keyed by the question's index.
type acpQuestion struct {
	ids     []string          // the canonical questions, by index
	answers map[string]string // by index, as they come
}

type acpOption struct {
	OptionID string `json:"optionId"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
}

func newACP(dir string) *acp {
	return &acp{rpcClient: newRPCClient("acp", true), cwd: dir, permissions: map[string]*acpPermission{}}
}

func (a *acp) Args() []string         { return nil }
func (a *acp) Capabilities() []string { return []string{"interrupt"} }

// Reusable: one ACP process carries many sessions, one after another.
func (a *acp) Reusable() bool { return true }

func (a *acp) Message(string) []byte { return nil }

// SessionArgs: ACP sessions start, and resume (session/resume, session/load), in-band.
func (a *acp) SessionArgs(string) []string { return nil }

// Prompt starts a session: initialize (once per process), session/new (or, for a
// session brought back, session/resume or session/load), session/prompt; each step is
// sent when the previous one's response arrives.
func (a *acp) Prompt(p protocol.Prompt) []byte {
	a.queued, a.trace, a.conversation = promptText(p), traceContext(p), ""
	a.resumed.begin(p)
	if !a.initialized {
		return a.call("initialize", map[string]any{"protocolVersion": 1,
			"clientCapabilities": map[string]any{"fs": map[string]any{"readTextFile": false, "writeTextFile": false}, "terminal": false}})
	}
	return a.openSession()
}

// Continue prompts the last session again: session/prompt keeps its conversation.
func (a *acp) Continue(p protocol.Prompt) []byte {
	text := p.Text
	if a.lastSession == "" {
		return a.Prompt(protocol.Prompt{Text: text, Traceparent: p.Traceparent, Tracestate: p.Tracestate})
	}
	a.sessionID, a.conversation, a.trace = a.lastSession, a.lastSession, traceContext(p)
	return a.prompt(text)
}

// prompt is the current session's session/prompt of text, with the session's trace
// context in its _meta when the node traces.
func (a *acp) prompt(text string) []byte {
	params := map[string]any{"sessionId": a.sessionID, "prompt": []any{map[string]any{"type": "text", "text": text}}}
	if a.trace != nil {
		params["_meta"] = a.trace
	}
	return a.call("session/prompt", params)
}

// opened prompts session id, just opened, with the queued prompt.
func (a *acp) opened(id, model, said string, raw []byte) ([]*protocol.Message, []byte, error) {
	a.sessionID, a.conversation, a.model = id, id, model
	prompt := a.prompt(a.queued)
	a.queued = ""
	msgs, _, err := one(canonical(map[string]any{"type": "progress", "message": said, "session_id": id}, raw))
	return msgs, prompt, err
}

// Interrupt cancels the turn and, as ACP requires of a client that cancels, answers
// each request the agent still waits on as cancelled: an agent may wait for those
// answers before it ends the turn (Gemini CLI does). Their answers from agentmux's
// supervisors, when they come, find nothing left to answer.
func (a *acp) Interrupt(string) []byte {
	if a.sessionID == "" {
		return nil
	}
	out := a.notify("session/cancel", map[string]any{"sessionId": a.sessionID})
	ids := make([]string, 0, len(a.permissions))
	for id := range a.permissions {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		out = append(out, a.Answer(nil, protocol.Response{ID: id, Outcome: protocol.OutcomeCancelled}, "")...)
	}
	return out
}

func (a *acp) Decode(data []byte) ([]*protocol.Message, []byte, error) {
	m, raw, err := a.read(data)
	switch {
	case err != nil:
		return nil, nil, err
	case m.isRequest():
		return a.request(m, raw)
	case m.isNotification():
		msgs, err := a.notification(m, raw)
		return msgs, nil, err
	default:
		return a.response(m, raw)
	}
}

// response handles the answer to one of our calls.
func (a *acp) response(m *rpcMessage, raw []byte) ([]*protocol.Message, []byte, error) {
	method := a.answered(m)
	if m.Error != nil && (method == "session/resume" || method == "session/load") {
		return a.notResumed(method, m, raw)
	}
	if m.Error != nil {
		msg, err := canonical(map[string]any{"type": "error", "message": fmt.Sprintf("acp %s: %s (%d)", method, m.Error.Message, m.Error.Code)}, raw)
		return one(msg, err)
	}
	switch method {
	case "initialize":
		a.initialized = true
		a.resumed.offered(m.Result)
		msg, err := canonical(map[string]any{"type": "log", "message": "acp agent initialized"}, raw)
		msgs, _, err := one(msg, err)
		return msgs, a.openSession(), err
	case "session/new":
		var r struct {
			SessionID string `json:"sessionId"`
			Models    struct {
				CurrentModelID string `json:"currentModelId"`
			} `json:"models"`
		}
		_ = json.Unmarshal(m.Result, &r)
		return a.opened(r.SessionID, r.Models.CurrentModelID, "acp session "+r.SessionID, raw)
	case "session/resume", "session/load":
		return a.reopened(method, m.Result, raw)
	case "session/prompt":
		var r struct {
			StopReason string          `json:"stopReason"`
			Usage      json.RawMessage `json:"usage"`
		}
		_ = json.Unmarshal(m.Result, &r)
		session := a.sessionID
		a.sessionID, a.lastSession = "", session
		fields := map[string]any{"type": "result", "stop_reason": r.StopReason, "usage": r.Usage, "session_id": session}
		if r.StopReason != "end_turn" && r.StopReason != "max_tokens" && r.StopReason != "max_turn_requests" {
			fields = map[string]any{"type": "error", "message": "acp turn ended: " + r.StopReason, "stop_reason": r.StopReason, "session_id": session}
		}
		var msgs []*protocol.Message
		if used, err := a.turnUsage(r.Usage); err != nil || used != nil {
			if err != nil {
				return nil, nil, err
			}
			msgs = append(msgs, used)
		}
		msg, err := canonical(fields, raw)
		if err != nil {
			return nil, nil, err
		}
		return append(msgs, msg), nil, nil
	}
	msg, err := canonical(map[string]any{"type": "log", "message": "acp response to " + method}, raw)
	return one(msg, err)
}

// notification turns session/update into partials and progress.
func (a *acp) notification(m *rpcMessage, raw []byte) ([]*protocol.Message, error) {
	if a.resumed.replaying(m) {
		return nil, nil
	}
	if m.Method != "session/update" {
		msg, err := canonical(map[string]any{"type": "acp." + strings.ReplaceAll(m.Method, "/", ".")}, raw)
		msgs, _, err := one(msg, err)
		return msgs, err
	}
	var p struct {
		Update struct {
			SessionUpdate string `json:"sessionUpdate"`
			Content       struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			Title  string `json:"title"`
			Status string `json:"status"`
			Cost   *struct {
				Amount   float64 `json:"amount"`
				Currency string  `json:"currency"`
			} `json:"cost"`
		} `json:"update"`
	}
	_ = json.Unmarshal(m.Params, &p)
	u := p.Update
	var fields map[string]any
	switch u.SessionUpdate {
	case "agent_message_chunk":
		fields = map[string]any{"type": "partial", "text": u.Content.Text}
	case "agent_thought_chunk":
		fields = map[string]any{"type": "progress", "message": "thinking"}
	case "tool_call", "tool_call_update":
		fields = map[string]any{"type": "progress", "message": strings.TrimSpace(u.Title + " " + u.Status)}
		if a.keeps && u.SessionUpdate == "tool_call_update" && (u.Status == "completed" || u.Status == "failed") {
			msg, err := canonical(fields, raw)
			if err != nil {
				return nil, err
			}
			return append([]*protocol.Message{msg}, checkpointMark(a.conversation)...), nil // a tool's result in: a safe point
		}
	case "plan":
		fields = map[string]any{"type": "progress", "message": "plan updated"}
	case "usage_update":
		// The session's cost so far (used and size are the context window's); a cost in
		// another currency or unit is not dollars, and stays a log line.
		fields = map[string]any{"type": "log", "message": "acp usage_update"}
		if u.Cost != nil && u.Cost.Currency == "USD" {
			fields = map[string]any{"type": "usage", "model": a.model, "cost_usd": u.Cost.Amount, "total": true}
		}
	default:
		fields = map[string]any{"type": "log", "message": "acp " + u.SessionUpdate}
	}
	msg, err := canonical(fields, raw)
	msgs, _, err := one(msg, err)
	return msgs, err
}

// request handles a call from the agent: permission requests become approvals, form
// elicitations questions; the rest is refused, as the client offers no file system or
// terminal.
func (a *acp) request(m *rpcMessage, raw []byte) ([]*protocol.Message, []byte, error) {
	if m.Method == "elicitation/create" {
		return a.elicitation(m, raw)
	}
	if m.Method != "session/request_permission" {
		reply := refuse(map[string]any{"jsonrpc": "2.0"}, m)
		msg, err := canonical(map[string]any{"type": "log", "message": "refused acp " + m.Method}, raw)
		msgs, _, err := one(msg, err)
		return msgs, reply, err
	}
	var p struct {
		ToolCall struct {
			Title     string          `json:"title"`
			Kind      string          `json:"kind"`
			RawInput  json.RawMessage `json:"rawInput"`
			Locations []struct {
				Path string `json:"path"`
			} `json:"locations"`
			Meta struct {
				Kind      string         `json:"qwenInteractionKind"`
				Questions []qwenQuestion `json:"qwenQuestions"`
			} `json:"_meta"`
		} `json:"toolCall"`
		Options []acpOption `json:"options"`
	}
	_ = json.Unmarshal(m.Params, &p)
	id := "perm-" + strings.Trim(string(m.ID), `"`)
	if p.ToolCall.Meta.Kind == "user_question" && len(p.ToolCall.Meta.Questions) > 0 {
		return a.questions(id, m.ID, p.Options, p.ToolCall.Meta.Questions, raw)
	}
	a.permissions[id] = &acpPermission{rpcID: m.ID, options: p.Options}
	description := p.ToolCall.Title
	if len(p.ToolCall.RawInput) > 0 && string(p.ToolCall.RawInput) != "{}" {
		description += " " + string(p.ToolCall.RawInput)
	}
	fields := map[string]any{"type": "approval", "id": id, "description": description, "tool_kind": p.ToolCall.Kind,
		"input": p.ToolCall.RawInput, "acp_options": p.Options}
	var paths []string
	for _, l := range p.ToolCall.Locations {
		if l.Path != "" {
			paths = append(paths, l.Path)
		}
	}
	if len(paths) > 0 {
		fields["paths"] = paths // the files the call touches, for the conflict radar
	}
	msg, err := canonical(fields, raw)
	return one(msg, err)
}

type qwenQuestion struct {
	Question string `json:"question"`
	Header   string `json:"header"`
	Options  []struct {
		Label       string `json:"label"`
		Description string `json:"description"`
	} `json:"options"`
	MultiSelect bool `json:"multiSelect"`
}

// questions turns Qwen Code's questions into agentmux's, one each, answered together.
func (a *acp) questions(id string, rpcID json.RawMessage, options []acpOption, qs []qwenQuestion, raw []byte) ([]*protocol.Message, []byte, error) {
	group := &acpQuestion{answers: map[string]string{}}
	var out []*protocol.Message
	for i, q := range qs {
		qid := id + "#" + strconv.Itoa(i)
		group.ids = append(group.ids, qid)
		a.permissions[qid] = &acpPermission{rpcID: rpcID, options: options, questions: group}
		fields := map[string]any{"type": "question", "id": qid, "question": q.Question, "context": q.Header}
		if len(q.Options) > 0 {
			opts := make([]map[string]string, len(q.Options))
			for j, o := range q.Options {
				opts[j] = map[string]string{"value": o.Label, "description": o.Description}
			}
			fields["kind"], fields["options"], fields["multi"] = "select", opts, q.MultiSelect
		}
		msg, err := canonical(fields, raw)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, msg)
	}
	return out, nil, nil
}

// answerQuestion records one of a Qwen Code question's answers and, once all are in
// (or one is cancelled), writes the reply.
func (a *acp) answerQuestion(p *acpPermission, r protocol.Response) []byte {
	g := p.questions
	index := strings.TrimPrefix(r.ID[strings.LastIndex(r.ID, "#"):], "#")
	if r.Outcome == protocol.OutcomeCancelled {
		for _, id := range g.ids {
			delete(a.permissions, id)
		}
		return line(map[string]any{"jsonrpc": "2.0", "id": p.rpcID, "result": map[string]any{"outcome": map[string]any{"outcome": "cancelled"}}})
	}
	var answer string
	if json.Unmarshal(r.Value, &answer) != nil {
		var many []string
		_ = json.Unmarshal(r.Value, &many)
		answer = strings.Join(many, ", ")
	}
	g.answers[index] = answer
	if len(g.answers) < len(g.ids) {
		return nil
	}
	outcome := map[string]any{"outcome": "cancelled"}
	if option, ok := pickOption(p.options, "allow"); ok {
		outcome = map[string]any{"outcome": "selected", "optionId": option}
	}
	return line(map[string]any{"jsonrpc": "2.0", "id": p.rpcID, "result": map[string]any{"outcome": outcome, "answers": g.answers}})
}

// elicitation turns a form request into a question whose answer must fit its schema.
func (a *acp) elicitation(m *rpcMessage, raw []byte) ([]*protocol.Message, []byte, error) {
	var p struct {
		Message         string          `json:"message"`
		RequestedSchema json.RawMessage `json:"requestedSchema"`
	}
	_ = json.Unmarshal(m.Params, &p)
	id := "elicit-" + strings.Trim(string(m.ID), `"`)
	a.permissions[id] = &acpPermission{rpcID: m.ID, elicitation: true}
	fields := map[string]any{"type": "question", "id": id, "question": p.Message}
	if len(p.RequestedSchema) > 0 {
		fields["kind"], fields["schema"] = "custom", p.RequestedSchema
	}
	msgs, _, err := one(canonical(fields, raw))
	return msgs, nil, err
}

// Answer replies to a permission request with the option the answer picks: "yes" the
// agent's allow-once option, anything else its reject-once one (an agent that offers
// only the always kind gets that), cancelled as cancelled; never "allow always", which
// would let the agent skip agentmux for the rest of the session ("yes for session" is
// agentmux's own, and its supervisors see each request it covers); and
// to a form with accept and the answer (cancel when the session ends, decline when the
// answer is the default of a request nobody answered).
func (a *acp) Answer(_ *protocol.Message, r protocol.Response, _ string) []byte {
	p, ok := a.permissions[r.ID]
	if !ok {
		return nil
	}
	delete(a.permissions, r.ID)
	if p.questions != nil {
		return a.answerQuestion(p, r)
	}
	if p.elicitation {
		result := map[string]any{"action": "accept", "content": r.Value}
		switch r.Outcome {
		case protocol.OutcomeCancelled:
			result = map[string]any{"action": "cancel"}
		case protocol.OutcomeTimedOut, protocol.OutcomeInvalid:
			result = map[string]any{"action": "decline"}
		}
		return line(map[string]any{"jsonrpc": "2.0", "id": p.rpcID, "result": result})
	}
	outcome := map[string]any{"outcome": "cancelled"}
	if r.Outcome != protocol.OutcomeCancelled {
		var v string
		_ = json.Unmarshal(r.Value, &v)
		want := "reject"
		if v == "yes" {
			want = "allow"
		}
		if id, ok := pickOption(p.options, want); ok {
			outcome = map[string]any{"outcome": "selected", "optionId": id}
		}
	}
	return line(map[string]any{"jsonrpc": "2.0", "id": p.rpcID, "result": map[string]any{"outcome": outcome}})
}

// pickOption is the option of kind want+"_once", else the first of kind want+"…".
func pickOption(options []acpOption, want string) (string, bool) {
	for _, o := range options {
		if o.Kind == want+"_once" {
			return o.OptionID, true
		}
	}
	for _, o := range options {
		if strings.HasPrefix(o.Kind, want) {
			return o.OptionID, true
		}
	}
	return "", false
}

func one(m *protocol.Message, err error) ([]*protocol.Message, []byte, error) {
	if err != nil {
		return nil, nil, err
	}
	return []*protocol.Message{m}, nil, nil
}

// refuse answers a call the client does not offer with "method not found"; envelope
// holds the protocol's own fields ("jsonrpc" for ACP, none for Codex).
func refuse(envelope map[string]any, m *rpcMessage) []byte {
	envelope["id"] = m.ID
	envelope["error"] = map[string]any{"code": rpcMethodNotFound, "message": "agentmux offers no " + m.Method}
	return line(envelope)
}

// turnUsage is a prompt response's usage, the ACP session's token totals, as a usage
// total of its model; nil when the agent gave none.
func (a *acp) turnUsage(raw json.RawMessage) (*protocol.Message, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var u struct {
		InputTokens       int64 `json:"inputTokens"`
		OutputTokens      int64 `json:"outputTokens"`
		CachedReadTokens  int64 `json:"cachedReadTokens"`
		CachedWriteTokens int64 `json:"cachedWriteTokens"`
	}
	if err := json.Unmarshal(raw, &u); err != nil {
		return nil, fmt.Errorf("acp: a prompt response's usage: %w", err)
	}
	return canonical(map[string]any{"type": "usage", "model": a.model, "input_tokens": u.InputTokens, "output_tokens": u.OutputTokens,
		"cache_read_tokens": u.CachedReadTokens, "cache_write_tokens": u.CachedWriteTokens, "total": true}, nil)
}
