package dialect

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/agentmux/agentmux/protocol"
)

// rpcClient is the client side of JSON-RPC over stdio as ACP and Codex's app server
// speak it: numbered calls remembered by method until their response, and each line
// the agent writes sorted into a request, a notification or a response.
type rpcClient struct {
	name    string // the protocol, for errors: "acp", "codex"
	version bool   // send "jsonrpc": "2.0" (Codex's app server leaves it out)
	nextID  int
	calls   map[int]string // our request id → method
}

func newRPCClient(name string, version bool) rpcClient {
	return rpcClient{name: name, version: version, calls: map[int]string{}}
}

// call is the line of a request to the agent, remembered until its response.
func (c *rpcClient) call(method string, params any) []byte {
	return c.callWith(method, params, nil)
}

// callWith is call with more members of the request beside its params (Codex's trace).
func (c *rpcClient) callWith(method string, params any, more map[string]any) []byte {
	c.nextID++
	c.calls[c.nextID] = method
	m := map[string]any{"id": c.nextID, "method": method, "params": params}
	for k, v := range more {
		m[k] = v
	}
	if c.version {
		m["jsonrpc"] = "2.0"
	}
	return line(m)
}

// traceContext is a prompt's W3C trace context as the JSON object both Codex's
// app server (a request's "trace") and ACP (a request's params' "_meta", as MCP's
// SEP-414 reserves the keys) read; nil when the prompt carries none.
func traceContext(p protocol.Prompt) map[string]any {
	if p.Traceparent == "" {
		return nil
	}
	t := map[string]any{"traceparent": p.Traceparent}
	if p.Tracestate != "" {
		t["tracestate"] = p.Tracestate
	}
	return t
}

// notify is the line of a notification to the agent (no response comes).
func (c *rpcClient) notify(method string, params any) []byte {
	m := map[string]any{"method": method, "params": params}
	if c.version {
		m["jsonrpc"] = "2.0"
	}
	return line(m)
}

// rpcMessage is one line from the agent: a request (method and id), a notification
// (method alone) or a response to one of our calls (id, result or error).
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (m *rpcMessage) isRequest() bool      { return m.Method != "" && len(m.ID) > 0 }
func (m *rpcMessage) isNotification() bool { return m.Method != "" && len(m.ID) == 0 }

// read decodes one line from the agent, trimmed of surrounding space.
func (c *rpcClient) read(raw []byte) (*rpcMessage, []byte, error) {
	raw = bytes.TrimSpace(raw)
	var m rpcMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, raw, fmt.Errorf("%s: a line that is not JSON-RPC: %w", c.name, err)
	}
	return &m, raw, nil
}

// answered is the method of the call a response answers, which is then forgotten.
func (c *rpcClient) answered(m *rpcMessage) string {
	var id int
	_ = json.Unmarshal(m.ID, &id)
	method := c.calls[id]
	delete(c.calls, id)
	return method
}
