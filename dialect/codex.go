package dialect

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agentmux/agentmux/protocol"
)

// Codex is the dialect of `codex app-server`: JSON-RPC without the "jsonrpc" field; the
// runtime is its client, one thread per session.
const Codex = "codex"

// codex translates one app-server process.
type codex struct {
	vendor
	rpcClient
	cwd         string
	initialized bool
	queued      string
	trace       map[string]any // the session's trace context, on each turn/start
	threadID    string
	model       string // the thread's, for its token counts
	turnID      string
	lastMessage string
	approvals   map[string]json.RawMessage // canonical id → the server request's id
	inputs      map[string]*codexInput     // canonical question id → its request
	withdrawn   map[string]bool
	byRPC       map[string][]string     // the server request's id → canonical ids, for resolved
	changing    map[string][]fileChange // a file change item's id → what it changes, until it completes
	resume      string                  // the thread the next session goes on in (thread/resume)
	limitResets int64                   // when its account's limits reset, unix seconds, once it said
}

type codexInput struct {
	rpcID   json.RawMessage
	qid     string
	group   map[string][]string // question id → labels, once answered
	pending int
}

func newCodex(dir string) *codex {
	return &codex{rpcClient: newRPCClient("codex", false), cwd: dir, approvals: map[string]json.RawMessage{}, inputs: map[string]*codexInput{},
		withdrawn: map[string]bool{}, byRPC: map[string][]string{}, changing: map[string][]fileChange{}}
}

// Args starts the app server with the working directory writable by the commands a
// supervisor approves (Codex's default sandbox is read-only, so an approved write
// failed with "Read-only file system"). A host's own `-c sandbox_mode=…` comes later and
// wins.
func (c *codex) Args() []string {
	return []string{"app-server", "-c", `sandbox_mode="workspace-write"`}
}

// ModelArgs make Codex's model provider the node's gateway, an OpenAI Responses API,
// with the session's token in OPENAI_API_KEY. (Codex's built-in provider would first try
// a WebSocket the gateway does not serve.)
func (c *codex) ModelArgs(base string) []string {
	return []string{"-c", `model_provider="agentmux"`, "-c",
		fmt.Sprintf(`model_providers.agentmux={ name = "agentmux", base_url = %q, env_key = "OPENAI_API_KEY", wire_api = "responses" }`, base)}
}

func (c *codex) Capabilities() []string      { return []string{"interrupt", "message"} }
func (c *codex) Reusable() bool              { return true }
func (c *codex) SessionArgs(string) []string { return nil }

func (c *codex) Prompt(p protocol.Prompt) []byte {
	c.queued, c.lastMessage, c.trace = promptText(p), "", traceContext(p)
	c.threadID, c.resume = "", resumedConversation(p) // a session's own thread
	if !c.initialized {
		return c.call("initialize", map[string]any{"clientInfo": map[string]any{"name": "agentmux", "version": "1"}})
	}
	return c.startThread()
}

// Continue starts another turn on the session's thread, which keeps its conversation.
func (c *codex) Continue(p protocol.Prompt) []byte {
	text := p.Text
	if c.threadID == "" {
		return c.Prompt(protocol.Prompt{Text: text, Traceparent: p.Traceparent, Tracestate: p.Tracestate})
	}
	c.lastMessage, c.trace = "", traceContext(p)
	return c.turn(text)
}

// turn starts a turn of text on the session's thread, with the session's trace
// context in the request's "trace" when the node traces.
func (c *codex) turn(text string) []byte {
	var more map[string]any
	if c.trace != nil {
		more = map[string]any{"trace": c.trace}
	}
	return c.callWith("turn/start", map[string]any{"threadId": c.threadID, "input": []any{map[string]any{"type": "text", "text": text}}}, more)
}

// startThread starts the session's thread, or resumes the one it goes on from;
// "untrusted" makes Codex ask before anything it does not trust, so supervisors decide.
func (c *codex) startThread() []byte {
	if id := c.resume; id != "" {
		c.resume = ""
		return c.call("thread/resume", map[string]any{"threadId": id, "cwd": c.cwd, "approvalPolicy": "untrusted"})
	}
	return c.call("thread/start", map[string]any{"cwd": c.cwd, "approvalPolicy": "untrusted"})
}

func (c *codex) Interrupt(string) []byte {
	if c.threadID == "" || c.turnID == "" {
		return nil
	}
	return c.call("turn/interrupt", map[string]any{"threadId": c.threadID, "turnId": c.turnID})
}

// Message steers the running turn with more input.
func (c *codex) Message(text string) []byte {
	if c.threadID == "" || c.turnID == "" {
		return nil
	}
	return c.call("turn/steer", map[string]any{"threadId": c.threadID, "expectedTurnId": c.turnID,
		"input": []any{map[string]any{"type": "text", "text": text}}})
}

func (c *codex) Decode(data []byte) ([]*protocol.Message, []byte, error) {
	m, raw, err := c.read(data)
	switch {
	case err != nil:
		return nil, nil, err
	case m.isRequest():
		return c.request(m, raw)
	case m.isNotification():
		return c.notification(m, raw)
	default:
		return c.response(m, raw)
	}
}

func (c *codex) response(m *rpcMessage, raw []byte) ([]*protocol.Message, []byte, error) {
	method := c.answered(m)
	if m.Error != nil {
		if method == "turn/interrupt" || method == "turn/steer" {
			msg, err := canonical(map[string]any{"type": "log", "message": fmt.Sprintf("codex %s: %s", method, m.Error.Message)}, raw)
			return one(msg, err)
		}
		msg, err := canonical(map[string]any{"type": "error", "message": fmt.Sprintf("codex %s: %s (%d)", method, m.Error.Message, m.Error.Code)}, raw)
		return one(msg, err)
	}
	switch method {
	case "initialize":
		c.initialized = true
		msgs, _, err := one(canonical(map[string]any{"type": "log", "message": "codex app-server initialized"}, raw))
		return msgs, append(line(map[string]any{"method": "initialized"}), c.startThread()...), err
	case "thread/start", "thread/resume":
		var r struct {
			Thread struct {
				ID string `json:"id"`
			} `json:"thread"`
			Model string `json:"model"`
		}
		_ = json.Unmarshal(m.Result, &r)
		c.threadID, c.model = r.Thread.ID, r.Model
		turn := c.turn(c.queued)
		c.queued = ""
		msgs, _, err := one(canonical(map[string]any{"type": "progress", "message": "codex thread " + c.threadID, "thread_id": c.threadID}, raw))
		return msgs, turn, err
	case "turn/start":
		var r struct {
			Turn struct {
				ID string `json:"id"`
			} `json:"turn"`
		}
		_ = json.Unmarshal(m.Result, &r)
		c.turnID = r.Turn.ID
	}
	return one(canonical(map[string]any{"type": "log", "message": "codex " + method + " accepted"}, raw))
}

type codexItem struct {
	ID      string       `json:"id"`
	Type    string       `json:"type"`
	Text    string       `json:"text"`
	Command string       `json:"command"`
	Status  string       `json:"status"`
	Changes []fileChange `json:"changes"` // a fileChange's
}

// fileChange is one file of a Codex file change: its path and unified diff.
type fileChange struct {
	Path string `json:"path"`
	Diff string `json:"diff,omitempty"`
}

func (c *codex) notification(m *rpcMessage, raw []byte) ([]*protocol.Message, []byte, error) {
	var p struct {
		Item      codexItem       `json:"item"`
		RequestID json.RawMessage `json:"requestId"`
		Turn      struct {
			ID     string `json:"id"`
			Status string `json:"status"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		} `json:"turn"`
	}
	_ = json.Unmarshal(m.Params, &p)
	var fields map[string]any
	switch m.Method {
	case "turn/started":
		c.turnID = p.Turn.ID
		fields = map[string]any{"type": "progress", "message": "codex turn started"}
	case "item/started":
		if p.Item.Type != "commandExecution" && p.Item.Type != "fileChange" {
			return nil, nil, nil
		}
		if p.Item.Type == "fileChange" && p.Item.ID != "" {
			c.changing[p.Item.ID] = p.Item.Changes // its approval names the item, not the files
		}
		fields = map[string]any{"type": "progress", "message": strings.TrimSpace(p.Item.Type + " " + p.Item.Command)}
	case "item/completed":
		switch p.Item.Type {
		case "agentMessage":
			c.lastMessage = p.Item.Text
			fields = map[string]any{"type": "partial", "text": p.Item.Text}
		case "commandExecution", "fileChange":
			delete(c.changing, p.Item.ID)
			msgs, _, err := one(canonical(map[string]any{"type": "progress", "message": strings.TrimSpace(p.Item.Type + " " + p.Item.Status)}, raw))
			return append(msgs, checkpointMark(c.threadID)...), nil, err
		default:
			return nil, nil, nil
		}
	case "serverRequest/resolved":
		return c.resolved(p.RequestID, raw), nil, nil
	case "account/rateLimits/updated":
		c.codexRateLimits(m.Params)
		fields = map[string]any{"type": "log", "message": "codex account/rateLimits/updated"}
	case "error":
		if limit, err := c.codexLimit(m.Params, raw, time.Now()); limit != nil || err != nil {
			return []*protocol.Message{limit}, nil, err
		}
		fields = map[string]any{"type": "log", "message": "codex error"}
	case "thread/tokenUsage/updated":
		return one(c.usage(m.Params, raw))
	case "turn/completed":
		thread := c.threadID
		c.turnID = ""
		switch p.Turn.Status {
		case "completed":
			fields = map[string]any{"type": "result", "text": c.lastMessage, "thread_id": thread, "status": p.Turn.Status}
		default:
			msg := "codex turn " + p.Turn.Status
			if p.Turn.Error != nil && p.Turn.Error.Message != "" {
				msg += ": " + p.Turn.Error.Message
			}
			fields = map[string]any{"type": "error", "message": msg, "thread_id": thread, "status": p.Turn.Status}
		}
	default:
		fields = map[string]any{"type": "log", "message": "codex " + m.Method}
	}
	return one(canonical(fields, raw))
}

// request handles the server's requests: approvals and questions; the rest is refused.
func (c *codex) request(m *rpcMessage, raw []byte) ([]*protocol.Message, []byte, error) {
	rpc := strings.Trim(string(m.ID), `"`)
	switch m.Method {
	case "item/commandExecution/requestApproval", "item/fileChange/requestApproval":
		var p struct {
			Command string `json:"command"`
			Reason  string `json:"reason"`
			Cwd     string `json:"cwd"`
			ItemID  string `json:"itemId"`
		}
		_ = json.Unmarshal(m.Params, &p)
		id := "codex-" + rpc
		c.approvals[id] = m.ID
		c.byRPC[rpc] = []string{id}
		// tool and input in Claude Code's shape, for permission rules: a command is Bash,
		// a file change Edit (the request does not say which files).
		desc, tool, input := "Run: "+p.Command, "Bash", map[string]any{"command": p.Command}
		if m.Method == "item/fileChange/requestApproval" {
			desc, tool, input = "Change files", "Edit", map[string]any{}
		}
		if p.Reason != "" {
			desc += " (" + p.Reason + ")"
		}
		fields := map[string]any{"type": "approval", "id": id, "description": desc, "cwd": p.Cwd, "tool": tool, "input": input}
		if changes := c.changing[p.ItemID]; m.Method == "item/fileChange/requestApproval" && len(changes) > 0 {
			paths := make([]string, len(changes))
			for i, ch := range changes {
				paths[i] = ch.Path
			}
			fields["paths"] = paths    // the files the change touches, for the conflict radar
			input["changes"] = changes // and how, for the person who decides
		}
		msgs, _, err := one(canonical(fields, raw))
		return msgs, nil, err
	case "item/tool/requestUserInput":
		return c.userInput(m, rpc, raw)
	}
	reply := refuse(map[string]any{}, m)
	msgs, _, err := one(canonical(map[string]any{"type": "log", "message": "refused codex " + m.Method}, raw))
	return msgs, reply, err
}

func (c *codex) userInput(m *rpcMessage, rpc string, raw []byte) ([]*protocol.Message, []byte, error) {
	var p struct {
		Questions []struct {
			ID       string `json:"id"`
			Header   string `json:"header"`
			Question string `json:"question"`
			Options  []struct {
				Label       string `json:"label"`
				Description string `json:"description"`
			} `json:"options"`
		} `json:"questions"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil || len(p.Questions) == 0 {
		return nil, nil, fmt.Errorf("codex: requestUserInput without questions")
	}
	group := map[string][]string{}
	var out []*protocol.Message
	for _, q := range p.Questions {
		id := "codex-" + rpc + "#" + q.ID
		in := &codexInput{rpcID: m.ID, qid: q.ID, group: group, pending: len(p.Questions)}
		c.inputs[id] = in
		c.byRPC[rpc] = append(c.byRPC[rpc], id)
		fields := map[string]any{"type": "question", "id": id, "question": q.Question, "context": q.Header}
		if len(q.Options) > 0 {
			options := make([]map[string]string, len(q.Options))
			for i, o := range q.Options {
				options[i] = map[string]string{"value": o.Label, "description": o.Description}
			}
			fields["kind"], fields["options"] = "select", options
		}
		msg, err := canonical(fields, raw)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, msg)
	}
	return out, nil, nil
}

// resolved: the server cleared a request; its canonical requests end cancelled.
func (c *codex) resolved(requestID json.RawMessage, raw []byte) []*protocol.Message {
	rpc := strings.Trim(string(requestID), `"`)
	var out []*protocol.Message
	for _, id := range c.byRPC[rpc] {
		if _, open := c.approvals[id]; !open {
			if _, open := c.inputs[id]; !open {
				continue // answered already
			}
		}
		c.withdrawn[id] = true
		out = append(out, &protocol.Message{Type: protocol.TypeWithdrawn, Name: "serverRequest/resolved", ID: id, Raw: bytes.Clone(raw)})
	}
	delete(c.byRPC, rpc)
	return out
}

func (c *codex) Answer(_ *protocol.Message, r protocol.Response, _ string) []byte {
	if c.withdrawn[r.ID] {
		delete(c.withdrawn, r.ID)
		delete(c.approvals, r.ID)
		delete(c.inputs, r.ID)
		return nil
	}
	if rpcID, ok := c.approvals[r.ID]; ok {
		delete(c.approvals, r.ID)
		decision := "decline"
		var v string
		_ = json.Unmarshal(r.Value, &v)
		switch {
		case r.Outcome == protocol.OutcomeCancelled:
			decision = "cancel"
		case v == "yes":
			decision = "accept"
		}
		return line(map[string]any{"id": rpcID, "result": map[string]any{"decision": decision}})
	}
	in, ok := c.inputs[r.ID]
	if !ok {
		return nil
	}
	delete(c.inputs, r.ID)
	answers := []string{answerText(r.Value)}
	var list []string
	if json.Unmarshal(r.Value, &list) == nil {
		answers = list
	}
	in.group[in.qid] = answers
	if len(in.group) < in.pending {
		return nil
	}
	out := map[string]any{}
	for qid, a := range in.group {
		out[qid] = map[string]any{"answers": a}
	}
	return line(map[string]any{"id": in.rpcID, "result": map[string]any{"answers": out}})
}

// usage is a thread's running token total (thread/tokenUsage/updated) as a usage total
// of the thread's model: input without its cached part, which is counted as cache
// reads. Codex reports no cost; [pricing] prices it.
func (c *codex) usage(params json.RawMessage, raw []byte) (*protocol.Message, error) {
	var p struct {
		ThreadID   string `json:"threadId"`
		TokenUsage struct {
			Total struct {
				InputTokens       int64 `json:"inputTokens"`
				CachedInputTokens int64 `json:"cachedInputTokens"`
				OutputTokens      int64 `json:"outputTokens"`
			} `json:"total"`
		} `json:"tokenUsage"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, fmt.Errorf("codex: thread/tokenUsage/updated: %w", err)
	}
	t := p.TokenUsage.Total
	return canonical(map[string]any{"type": "usage", "model": c.model, "input_tokens": max(t.InputTokens-t.CachedInputTokens, 0),
		"cache_read_tokens": t.CachedInputTokens, "output_tokens": t.OutputTokens, "total": true, "thread_id": p.ThreadID}, raw)
}
