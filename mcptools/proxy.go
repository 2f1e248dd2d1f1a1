package mcptools

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Connect opens an MCP session with the console's tools.
type Connect func(ctx context.Context) (*mcp.ClientSession, error)

// Proxy serves the tools by forwarding each call to the console's MCP server through one
// session, opened at the first call and again after one breaks: so an agent's MCP
// server process is one attached session. When the console cannot be reached, approve
// answers the fallback (unreachable: deny; ask also denies, as no one can be asked) and
// ask fails, each saying why.
type Proxy struct {
	connect     Connect
	unreachable string

	mu      sync.Mutex
	session *mcp.ClientSession
}

// NewProxy is the stdio side of `agentmux mcp`: Server() serves it.
func NewProxy(connect Connect, unreachable string) *Proxy {
	return &Proxy{connect: connect, unreachable: unreachable}
}

// Server is the MCP server of the proxied tools.
func (p *Proxy) Server(version string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "agentmux", Version: version}, nil)
	mcp.AddTool(s, approveTool(), p.approve)
	mcp.AddTool(s, askTool(), p.ask)
	return s
}

// Close ends the session with the console, which ends the attached session.
func (p *Proxy) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.session == nil {
		return nil
	}
	err := p.session.Close()
	p.session = nil
	return err
}

// call forwards a call of tool with args to the console.
func (p *Proxy) call(ctx context.Context, tool string, args any) (*mcp.CallToolResult, error) {
	cs, err := p.open(ctx)
	if err != nil {
		return nil, err
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if errors.Is(err, mcp.ErrSessionMissing) {
		// The console closed the session (idle, or restarted), so the call was not
		// made: make it again in a new one.
		p.drop(cs)
		if cs, err = p.open(ctx); err != nil {
			return nil, err
		}
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	}
	if err != nil {
		p.drop(cs) // a new one at the next call
		return nil, err
	}
	return res, nil
}

// open is the session with the console, opened now if there is none.
func (p *Proxy) open(ctx context.Context) (*mcp.ClientSession, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.session == nil {
		cs, err := p.connect(ctx)
		if err != nil {
			return nil, err
		}
		p.session = cs
	}
	return p.session, nil
}

// drop forgets session cs, if it is still the one in use.
func (p *Proxy) drop(cs *mcp.ClientSession) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.session == cs {
		p.session = nil
		_ = cs.Close()
	}
}

func (p *Proxy) approve(ctx context.Context, _ *mcp.CallToolRequest, in ApproveInput) (*mcp.CallToolResult, any, error) {
	res, err := p.call(ctx, Approve, in)
	if err != nil {
		return permissionResult(permissionOf(unreachable(p.unreachable, "the console: "+err.Error()), in.Input)), nil, nil
	}
	return res, nil, nil
}

func (p *Proxy) ask(ctx context.Context, _ *mcp.CallToolRequest, in AskInput) (*mcp.CallToolResult, any, error) {
	res, err := p.call(ctx, Ask, in)
	if err != nil {
		return nil, nil, fmt.Errorf("agentmux could not put the question to its supervisors (the console: %v); decide without their answer, or stop", err)
	}
	return res, nil, nil
}
