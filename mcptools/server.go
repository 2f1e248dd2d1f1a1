package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmux/agentmux/hook"
	"github.com/agentmux/agentmux/wire"
)

// endWait bounds telling the fleet that an MCP session ended.
const endWait = 30 * time.Second

// Decider decides the tools' calls for one attached source.
type Decider struct {
	Ask         Asker
	Unreachable string // the source's: deny, or ask (which the approve tool cannot, so it denies)
	Version     string // the server's, as MCP's initialize reports it
}

// NewServer is the MCP server of the tools, deciding each call through d. The caller
// is the user of the bearer token its transport verified (the request's TokenInfo);
// the agentmux session is "mcp-" and the MCP session's id, and it ends with the MCP
// session.
func NewServer(d Decider) *mcp.Server {
	t := &tools{d: d, users: map[string]string{}}
	s := mcp.NewServer(&mcp.Implementation{Name: "agentmux", Version: d.Version}, &mcp.ServerOptions{
		InitializedHandler: func(_ context.Context, req *mcp.InitializedRequest) { go t.endWith(req.Session) },
	})
	mcp.AddTool(s, approveTool(), t.approve)
	mcp.AddTool(s, askTool(), t.ask)
	return s
}

// tools decides the calls of the MCP sessions of one server.
type tools struct {
	d     Decider
	mu    sync.Mutex
	users map[string]string // the user of each attached session a call opened
}

// session is the attached session of an MCP session, and its user.
func (t *tools) session(req *mcp.CallToolRequest) (id, user string, err error) {
	if req.Extra == nil || req.Extra.TokenInfo == nil || req.Extra.TokenInfo.UserID == "" {
		return "", "", errors.New("mcptools: a call without a verified token")
	}
	id, user = sessionID(req.Session), req.Extra.TokenInfo.UserID
	t.mu.Lock()
	if _, ok := t.users[id]; !ok {
		t.users[id] = user
	}
	t.mu.Unlock()
	return id, user, nil
}

func sessionID(ss *mcp.ServerSession) string { return "mcp-" + ss.ID() }

func (t *tools) approve(ctx context.Context, req *mcp.CallToolRequest, in ApproveInput) (*mcp.CallToolResult, any, error) {
	id, user, err := t.session(req)
	if err != nil {
		return nil, nil, err
	}
	ar, err := approvalRequest(id, user, in)
	if err != nil {
		return nil, nil, err
	}
	reply, err := t.d.Ask(ctx, ar)
	v := hook.VerdictFor(reply, err, func(why string) hook.Verdict { return unreachable(t.d.Unreachable, why) })
	return permissionResult(permissionOf(v, in.Input)), nil, nil
}

func (t *tools) ask(ctx context.Context, req *mcp.CallToolRequest, in AskInput) (*mcp.CallToolResult, Answer, error) {
	id, user, err := t.session(req)
	if err != nil {
		return nil, Answer{}, err
	}
	ar, err := questionRequest(id, user, in)
	if err != nil {
		return nil, Answer{}, err
	}
	reply, err := t.d.Ask(ctx, ar)
	switch {
	case err != nil:
		return nil, Answer{}, fmt.Errorf("agentmux could not put the question to its supervisors: %v; decide without their answer, or stop", err)
	case reply.Code != "":
		return nil, Answer{}, fmt.Errorf("agentmux refused the question: %s", reply.Error)
	}
	var answer any
	_ = json.Unmarshal(reply.Value, &answer)
	return nil, Answer{Answer: answer, Outcome: reply.Outcome, Reason: reply.Reason}, nil
}

// endWith ends the attached session when the MCP session ends (nothing is open when no
// call was made, and the fleet says so).
func (t *tools) endWith(ss *mcp.ServerSession) {
	_ = ss.Wait()
	id := sessionID(ss)
	t.mu.Lock()
	user, opened := t.users[id]
	delete(t.users, id)
	t.mu.Unlock()
	if !opened {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), endWait)
	defer cancel()
	_, _ = t.d.Ask(ctx, &wire.AttachRequest{Session: id, User: user, Event: "MCP session closed", End: true})
}
