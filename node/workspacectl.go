package node

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/wire"
	"github.com/agentmux/agentmux/workspace"
)

// workspaceCtlTimeout bounds one workspace request: a diff, or removing kept workspaces.
const workspaceCtlTimeout = 2 * time.Minute

// serveWorkspaces answers agentmux.ctl.<node>.workspaces (the workspaces this node
// holds), .workspace-diff and .workspace-clean, each on a goroutine of its own: a git
// command may take its time.
func (n *Node) serveWorkspaces() error {
	for verb, fn := range map[string]func(ctx context.Context, data []byte) *wire.WorkspaceReply{
		"workspaces": n.listWorkspaces, "workspace-diff": n.diffWorkspace, "workspace-clean": n.cleanWorkspaces,
	} {
		if err := n.serveCtl(verb, workspaceCtlTimeout, func(ctx context.Context, data []byte) any { return fn(ctx, data) }); err != nil {
			return err
		}
	}
	return nil
}

// serveCtl answers agentmux.ctl.<node>.<verb> with what fn returns, as JSON, each
// request on a goroutine of its own, within timeout. Only a request a client published
// there is served (bus.CheckRequest).
func (n *Node) serveCtl(verb string, timeout time.Duration, fn func(ctx context.Context, data []byte) any) error {
	subject := wire.CtlSubject(n.Name, verb)
	sub, err := n.Bus.Conn.Subscribe(subject, func(m *nats.Msg) {
		if err := bus.CheckRequest(m, subject); err != nil {
			n.log.Warn("control request refused", "err", err)
			return
		}
		n.engine.routines.Go(func(ctx context.Context) {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			data, _ := json.Marshal(fn(ctx, m.Data))
			_ = m.Respond(data) // the requester times out on its own if this fails
		})
	})
	if err != nil {
		return fmt.Errorf("node: serve %s: %w", subject, err)
	}
	n.control.subs = append(n.control.subs, sub)
	return nil
}

func (n *Node) providers() map[string]*workspace.Provider {
	if p := n.workspaces.providers.Load(); p != nil {
		return *p
	}
	return nil
}

func (n *Node) listWorkspaces(context.Context, []byte) *wire.WorkspaceReply {
	out := &wire.WorkspaceReply{Records: []wire.WorkspaceRecord{}}
	for _, p := range n.providers() {
		recs, err := p.List()
		if err != nil {
			return &wire.WorkspaceReply{Error: err.Error()}
		}
		for _, r := range recs {
			r.Node = n.Name
			out.Records = append(out.Records, r)
		}
	}
	slices.SortFunc(out.Records, func(a, b wire.WorkspaceRecord) int { return a.Opened.Compare(b.Opened) })
	return out
}

func (n *Node) diffWorkspace(ctx context.Context, data []byte) *wire.WorkspaceReply {
	var req wire.WorkspaceDiff
	if err := json.Unmarshal(data, &req); err != nil {
		return &wire.WorkspaceReply{Error: "the request is not a workspace diff: " + err.Error()}
	}
	p := n.providers()[req.Host]
	if p == nil {
		return &wire.WorkspaceReply{Error: fmt.Sprintf("node %s gives host %q no workspaces", n.Name, req.Host)}
	}
	diff, cut, err := p.Diff(ctx, req)
	if err != nil {
		return &wire.WorkspaceReply{Error: err.Error()}
	}
	return &wire.WorkspaceReply{Diff: diff, Truncated: cut}
}

func (n *Node) cleanWorkspaces(ctx context.Context, data []byte) *wire.WorkspaceReply {
	var req wire.WorkspaceClean
	if len(data) > 0 {
		if err := json.Unmarshal(data, &req); err != nil {
			return &wire.WorkspaceReply{Error: "the request is not a workspace clean: " + err.Error()}
		}
	}
	out := &wire.WorkspaceReply{Records: []wire.WorkspaceRecord{}}
	var errs []string
	for host, p := range n.providers() {
		if req.Host != "" && host != req.Host {
			continue
		}
		removed, err := p.Clean(ctx, req.Session)
		for _, r := range removed {
			r.Node = n.Name
			out.Records = append(out.Records, r)
		}
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	out.Error = strings.Join(errs, "; ")
	return out
}
