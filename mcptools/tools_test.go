package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmux/agentmux/protocol"
)

// An ask becomes a question of agentmux's protocol, a select when it has options; an
// approve becomes the approval Claude Code's hook would ask, in the words routes match.
func TestRequests(t *testing.T) {
	q, err := questionRequest("mcp-1", "alice", AskInput{Question: "Which database?", Options: []string{"postgres", "sqlite"}, Context: "a new service"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := protocol.Decode(q.Request, protocol.PlainTextResult)
	if err != nil || m.Type != protocol.TypeQuestion || m.Question != "Which database?" || m.EffectiveKind() != protocol.KindSelect || len(m.Options) != 2 || m.Options[1].Value != "sqlite" {
		t.Fatalf("the question: %+v %v", m, err)
	}
	if _, err := questionRequest("mcp-1", "alice", AskInput{Question: "  "}); err == nil {
		t.Error("an empty question was taken")
	}
	a, err := approvalRequest("mcp-1", "alice", ApproveInput{ToolName: "Bash", Input: map[string]any{"command": "npm test"}, ToolUseID: "toolu_1"})
	if err != nil {
		t.Fatal(err)
	}
	m, err = protocol.Decode(a.Request, protocol.PlainTextResult)
	if err != nil || m.Type != protocol.TypeApproval || m.Description != "Bash: npm test" || m.ID != "toolu_1" || a.User != "alice" || a.Session != "mcp-1" {
		t.Fatalf("the approval: %+v %+v %v", a, m, err)
	}
}

// With the console out of reach, the proxy's approve denies (even when the source's
// fallback is ask: no one can be asked) and says why; its ask fails, saying why.
func TestProxyFallsBack(t *testing.T) {
	down := func(context.Context) (*mcp.ClientSession, error) { return nil, errors.New("connection refused") }
	for _, mode := range []string{"deny", "ask"} {
		cs := connect(t, NewProxy(down, mode).Server("test"))
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: Approve, Arguments: map[string]any{"tool_name": "Bash", "input": map[string]any{"command": "rm -rf /"}}})
		if err != nil {
			t.Fatal(err)
		}
		var p Permission
		if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &p); err != nil || p.Behavior != "deny" || !strings.Contains(p.Message, "connection refused") {
			t.Errorf("%s: approve answered %+v %v; want a deny that says why", mode, p, err)
		}
		res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: Ask, Arguments: map[string]any{"question": "deploy?"}})
		if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "connection refused") {
			t.Errorf("%s: ask answered %+v %v; want an error that says why", mode, res, err)
		}
	}
}

// connect is a client session with server, in memory.
func connect(t *testing.T, server *mcp.Server) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := server.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}
