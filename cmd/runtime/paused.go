package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// pause pauses a running session at its next safe point: its task waits in the queue
// until --for has passed or `agentmux resume`.
func pause(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("pause", stdout, stderr)
	to := reachFlags(fs)
	reason := fs.String("reason", "", "why, for the session's events and audit")
	forFlag := fs.Duration("for", 0, "how long it stays paused unless resumed: at most its host's max_pause, which it is when not given")
	pos, err := parse(fs, args)
	if err != nil {
		return usageError(stderr, err)
	}
	if len(pos) != 1 || *forFlag < 0 {
		fmt.Fprintln(stderr, "agentmux pause: want a running session's id (or the start of one): pause -c <manifest> <session> [--for 2h] [--reason why]")
		return exitUsage
	}
	c, code := to.client("pause", stderr)
	if c == nil {
		return code
	}
	defer c.close()
	who, err := responder(c, "")
	if err != nil {
		fmt.Fprintln(stderr, "agentmux pause:", err)
		return exitUsage
	}
	why := "paused by " + who
	if *reason != "" {
		why += ": " + *reason
	}
	ctx, cancel := c.timeout(clientTimeout)
	defer cancel()
	all, _, err := fleetSessions(ctx, c)
	if err != nil {
		fmt.Fprintln(stderr, "agentmux pause:", c.explain(err))
		return exitError
	}
	s, err := resolveSession(all, pos[0])
	if err != nil {
		fmt.Fprintln(stderr, "agentmux pause:", err)
		return exitError
	}
	req := map[string]any{"session": s.Session, "text": why}
	if *forFlag > 0 {
		req["until_ms"] = time.Now().Add(*forFlag).UnixMilli()
	}
	effect, err := ctl(ctx, c, s.Node, "pause", req)
	if err != nil {
		fmt.Fprintf(stderr, "agentmux pause: session %s on %s: %v\n", s.Session, s.Node, err)
		return exitError
	}
	fmt.Fprintf(stdout, "%s on %s: %s; `agentmux resume %s` goes on with it\n", s.Session, s.Node, effect, s.Session)
	return exitOK
}

// resume has a paused session go on now, or a failed one again, from its latest
// checkpoint (or afresh, --fresh), on whichever node takes its task, or on --node if it
// takes it within a minute.
func resume(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("resume", stdout, stderr)
	to := reachFlags(fs)
	fresh := fs.Bool("fresh", false, "start it over, not from its latest checkpoint (its workspace from its base)")
	on := fs.String("node", "", "go on on this node (`agentmux nodes`), if it takes it within a minute; then on any node of its host")
	pos, err := parse(fs, args)
	if err != nil {
		return usageError(stderr, err)
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "agentmux resume: want a paused or failed session's id: resume -c <manifest> <session> [--fresh] [--node name]")
		return exitUsage
	}
	c, code := to.client("resume", stderr)
	if c == nil {
		return code
	}
	defer c.close()
	who, err := responder(c, "")
	if err != nil {
		fmt.Fprintln(stderr, "agentmux resume:", err)
		return exitUsage
	}
	ctx, cancel := c.timeout(clientTimeout)
	defer cancel()
	id, err := pausedOrNamed(ctx, c, pos[0])
	if err != nil {
		fmt.Fprintln(stderr, "agentmux resume:", c.explain(err))
		return exitError
	}
	live, _, err := fleetSessions(ctx, c)
	if err != nil {
		fmt.Fprintln(stderr, "agentmux resume:", c.explain(err))
		return exitError
	}
	for _, s := range live {
		if s.Session == id {
			fmt.Fprintf(stderr, "agentmux resume: session %s is %s on %s: nothing to resume\n", id, s.State, s.Node)
			return exitError
		}
	}
	node, err := liveNode(ctx, c, *on)
	if err != nil {
		fmt.Fprintln(stderr, "agentmux resume:", c.explain(err))
		return exitError
	}
	effect, err := ctl(ctx, c, node, "resume", &wire.ResumeRequest{Session: id, Fresh: *fresh, Node: *on, By: who})
	if err != nil {
		fmt.Fprintf(stderr, "agentmux resume: %v\n", err)
		return exitError
	}
	fmt.Fprintf(stdout, "%s: %s\n", id, effect)
	return exitOK
}

// pausedOrNamed is the paused session id names, or starts with; else id itself (a
// failed session, which the node finds in the audit).
func pausedOrNamed(ctx context.Context, c *busClient, id string) (string, error) {
	paused, err := readPaused(ctx, c)
	if err != nil {
		return "", err
	}
	ids := make([]string, len(paused))
	for i, p := range paused {
		ids[i] = p.Session
	}
	found, err := byPrefix(ids, id, "paused sessions'")
	if err != nil || found != "" {
		return found, err
	}
	return id, nil
}

// anyLiveNode is the name of a node that is up: the one a fleet-wide request goes to.
func anyLiveNode(ctx context.Context, c *busClient) (string, error) { return liveNode(ctx, c, "") }

// liveNode is name when that node is up, or, for no name, any node that is.
func liveNode(ctx context.Context, c *busClient, name string) (string, error) {
	nodes, err := store.OpenNodes(ctx, c.js)
	if err != nil {
		return "", err
	}
	list, now, err := nodes.List(ctx)
	if err != nil {
		return "", err
	}
	var up []string
	for _, n := range list {
		if n.Alive(now) && (name == "" || n.Name == name) {
			return n.Name, nil
		}
		if n.Alive(now) {
			up = append(up, n.Name)
		}
	}
	if name != "" {
		return "", fmt.Errorf("node %s is not up; these are: %s (`agentmux nodes`)", name, cmp.Or(strings.Join(up, ", "), "none"))
	}
	return "", fmt.Errorf("no node is up: start one (`agentmux up`), and it takes the request")
}

// readPaused asks a live node for the fleet's paused sessions (agentmux.ctl.<node>.paused).
func readPaused(ctx context.Context, c *busClient) ([]wire.PausedSession, error) {
	node, err := anyLiveNode(ctx, c)
	if err != nil {
		return nil, err
	}
	msg, err := c.nc.RequestWithContext(ctx, wire.CtlSubject(node, "paused"), nil)
	if err != nil {
		return nil, fmt.Errorf("node %s did not say which sessions are paused: %w", node, err)
	}
	var out []wire.PausedSession
	if err := json.Unmarshal(msg.Data, &out); err != nil {
		return nil, fmt.Errorf("node %s answered %q, which is not a list of paused sessions", node, msg.Data)
	}
	return out, nil
}

// pausedSessions are the fleet's paused sessions as the sessions listing shows them.
func pausedSessions(ctx context.Context, c *busClient) ([]liveSession, error) {
	paused, err := readPaused(ctx, c)
	if err != nil {
		return nil, err
	}
	var out []liveSession
	now := time.Now()
	for i := range paused {
		p := paused[i]
		if p.Running != "" {
			continue // resumed: its node lists it
		}
		state := "paused"
		if p.Copy != "" {
			state = "queued" // resumed by hand: it waits for a node
		}
		out = append(out, liveSession{SessionInfo: wire.SessionInfo{Session: p.Session, Host: p.Host, Task: p.Task, State: state,
			Attempt: p.Attempt, AgeMS: float64(now.Sub(time.UnixMilli(p.Since)).Milliseconds())}, Node: p.Node, Paused: &p})
	}
	return out, nil
}
