package decide

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/internal/sandbox"
	"github.com/agentmux/agentmux/internal/shim"
	"github.com/agentmux/agentmux/protocol"
)

// postProcessor reworks a tool's result (an llm supervisor, when the route says so).
type postProcessor interface {
	postProcess(ctx context.Context, r *Request, result json.RawMessage) (Decision, error)
}

// withTools runs the manifest's tools for tool_calls that name one, and leaves every
// other request to inner. A tool's failure is the agent's answer, {"error": "…"}.
type withTools struct {
	inner  Decider
	tools  map[string]*config.Tool
	served func(ctx context.Context, tool string, call json.RawMessage) (json.RawMessage, error)
	post   postProcessor
	procs  *shim.Registry
	// sandboxes confine the tools, by "tools.<name>".
	sandboxes sandbox.Set
}

// ToolCall is what a tool reads: on stdin for a command tool, as the request payload on
// agentmux.tool.<name> for a served one.
type ToolCall struct {
	Tool    string          `json:"tool"`
	Args    json.RawMessage `json:"args"`
	Host    string          `json:"host"`
	Session string          `json:"session"`
	ID      string          `json:"id"`
}

func (w *withTools) Decide(ctx context.Context, r *Request) (Decision, error) {
	if r.Type != string(protocol.TypeToolCall) {
		return w.inner.Decide(ctx, r)
	}
	m := r.Message()
	tool, ok := w.tools[m.Tool]
	if !ok {
		return w.inner.Decide(ctx, r)
	}
	decider := "tool:" + tool.Name
	result, err := w.call(ctx, tool, r, m)
	if err != nil {
		v, _ := json.Marshal(map[string]string{"error": err.Error()})
		return Decision{Value: v, Decider: decider, Reason: err.Error()}, nil
	}
	if r.PostProcess && w.post != nil {
		dec, err := w.post.postProcess(ctx, r, result)
		if err == nil {
			return dec, nil
		}
		return Decision{Value: result, Decider: decider, Reason: "tool result unprocessed: " + err.Error()}, nil
	}
	return Decision{Value: result, Decider: decider, Reason: "tool " + tool.Name + " ran"}, nil
}

func (w *withTools) call(ctx context.Context, tool *config.Tool, r *Request, m *protocol.Message) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, tool.Timeout.D())
	defer cancel()
	args := m.Args
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	call, _ := json.Marshal(&ToolCall{Tool: tool.Name, Args: args, Host: r.Host, Session: r.Session, ID: r.ID})
	var out []byte
	var err error
	if tool.Command != "" {
		p := program{what: fmt.Sprintf("tool %q", tool.Name), Process: tool.Process, procs: w.procs, sandbox: w.sandboxes["tools."+tool.Name]}
		out, err = p.run(ctx, args)
	} else {
		if w.served == nil {
			return nil, fmt.Errorf("tool %q has no command and nothing serves agentmux.tool.%s here", tool.Name, tool.Name)
		}
		out, err = w.served(ctx, tool.Name, call)
	}
	if err != nil {
		return nil, err
	}
	if !json.Valid(out) {
		return nil, fmt.Errorf("tool %q returned something that is not JSON: %q", tool.Name, clip(string(out)))
	}
	return compactRaw(out), nil
}

func compactRaw(b []byte) json.RawMessage { return json.RawMessage(compact(b)) }
