package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

const drainPoll = 500 * time.Millisecond

// drain asks one node to stop taking tasks and hand back what it cannot finish.
func drain(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("drain", stdout, stderr)
	to := reachFlags(fs)
	grace := fs.Duration("grace", defaultDrainGrace, "how long running sessions may finish before their tasks go back to the queue")
	wait := fs.Bool("wait", false, "wait until no session is left on the node")
	handover := fs.Bool("handover", true, "hand each running session that can be checkpointed to another node at its next checkpoint; false: let it finish within the grace")
	pos, err := parse(fs, args)
	if err != nil {
		return usageError(stderr, err)
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "agentmux drain: want one node name: drain -c <manifest> <node> [--grace 30s] [--handover=false] [--wait]; `agentmux nodes` lists them")
		return exitUsage
	}
	node := pos[0]
	c, code := to.client("drain", stderr)
	if c == nil {
		return code
	}
	defer c.close()
	req, _ := json.Marshal(map[string]any{"grace_ms": grace.Milliseconds(), "handover": *handover})
	reqCtx, cancelReq := c.timeout(clientTimeout)
	defer cancelReq()
	msg, err := c.nc.RequestWithContext(reqCtx, wire.CtlSubject(node, "drain"), req)
	if err != nil {
		if refused := c.explain(nil); refused != nil {
			fmt.Fprintln(stderr, "agentmux drain:", refused)
			return exitError
		}
		fmt.Fprintf(stderr, "agentmux drain: node %q did not answer: %v; `agentmux nodes` lists the live ones\n", node, err)
		return exitError
	}
	var reply wire.DrainReply
	if err := json.Unmarshal(msg.Data, &reply); err != nil || !reply.OK {
		fmt.Fprintf(stderr, "agentmux drain: %s\n", msg.Data)
		return exitError
	}
	fmt.Fprintf(stdout, "%s: %s\n", node, reply.Effect)
	if !*wait {
		return exitOK
	}
	ctx, cancel := c.timeout(*grace + upStopTimeout)
	defer cancel()
	nodes, err := store.OpenNodes(ctx, c.js)
	if err != nil {
		fmt.Fprintln(stderr, "agentmux drain:", err)
		return exitError
	}
	for {
		list, serverNow, err := nodes.List(ctx)
		if err != nil {
			fmt.Fprintln(stderr, "agentmux drain:", err)
			return exitError
		}
		done := true
		for _, n := range list {
			if n.Name == node && n.Alive(serverNow) && n.Sessions > 0 {
				done = false
			}
		}
		if done {
			fmt.Fprintf(stdout, "%s: drained\n", node)
			return exitOK
		}
		select {
		case <-ctx.Done():
			fmt.Fprintf(stderr, "agentmux drain: %s still has sessions after %v\n", node, *grace+upStopTimeout)
			return exitError
		case <-time.After(drainPoll):
		}
	}
}

// undrain makes a draining node take tasks again.
func undrain(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("undrain", stdout, stderr)
	to := reachFlags(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return usageError(stderr, err)
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "agentmux undrain: want one node name: undrain -c <manifest> <node>; `agentmux nodes` lists them")
		return exitUsage
	}
	node := pos[0]
	c, code := to.client("undrain", stderr)
	if c == nil {
		return code
	}
	defer c.close()
	ctx, cancel := c.timeout(clientTimeout)
	defer cancel()
	effect, err := ctl(ctx, c, node, "undrain", nil)
	if err != nil {
		fmt.Fprintf(stderr, "agentmux undrain: %s: %v\n", node, err)
		return exitError
	}
	fmt.Fprintf(stdout, "%s: %s\n", node, effect)
	return exitOK
}
