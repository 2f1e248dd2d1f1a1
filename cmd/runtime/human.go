package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// pendingClient opens the pending-request store of the node the manifest names.
func pendingClient(cmd string, to *reach, stderr io.Writer) (*busClient, *store.PendingStore, int) {
	c, code := to.client(cmd, stderr)
	if c == nil {
		return nil, nil, code
	}
	ctx, cancel := c.timeout(clientTimeout)
	defer cancel()
	pending, err := store.OpenPending(ctx, c.js, c.nc)
	if err != nil {
		fmt.Fprintf(stderr, "agentmux %s: %v\n", cmd, c.explain(err))
		c.close()
		return nil, nil, exitError
	}
	return c, pending, exitOK
}

func pending(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("pending", stdout, stderr)
	to := reachFlags(fs)
	out := newOutputFlags(fs)
	if _, err := parse(fs, args); err != nil {
		return usageError(stderr, err)
	}
	form, err := out.form()
	if err != nil {
		return usageError(stderr, err)
	}
	c, pending, code := pendingClient("pending", to, stderr)
	if c == nil {
		return code
	}
	defer c.close()
	ctx, cancel := c.timeout(clientTimeout)
	defer cancel()
	list, err := pending.List(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "agentmux pending:", c.explain(err))
		return exitError
	}
	if form == outJSON {
		return jsonLines(stdout, list)
	}
	if len(list) == 0 {
		fmt.Fprintln(stdout, "nothing is waiting for a person")
		return exitOK
	}
	header := []string{"ID", "SUPERVISOR", "HOST", "SESSION", "AGE", "DEADLINE IN", "REQUEST", "OPTIONS"}
	if form == outWide {
		header = append(header, "NODE", "ATTEMPT", "CREATED", "ESCALATED BECAUSE")
	}
	rows := make([][]string, 0, len(list))
	now := time.Now()
	for _, p := range list {
		text := p.Type + ": " + p.Text
		if p.Suggestion != nil {
			text += fmt.Sprintf(" (suggested: %s)", p.Suggestion)
		}
		if form != outWide {
			text = oneLine(text, 80)
		}
		row := []string{p.ID, p.Supervisor, p.Host, p.Session, now.Sub(p.Created).Round(time.Second).String(),
			p.Deadline.Sub(now).Round(time.Second).String(), text, strings.Join(p.Options, "|")}
		if form == outWide {
			row = append(row, dash(p.Node), strconv.Itoa(p.Attempt), p.Created.UTC().Format(time.RFC3339), dash(oneLine(p.Escalation, 200)))
		}
		rows = append(rows, row)
	}
	return table(stdout, header, rows)
}

// requestID is what an id of a request waiting for a person may hold: a key of the
// pending bucket.
var requestID = regexp.MustCompile(`^[-/_=.a-zA-Z0-9]+$`)

// respond answers a request waiting for a person. Exit codes: 0 answered; 1 refused
// (already answered, past its deadline, cancelled) or the bus failed; 2 usage: a bad
// id, no such request, an answer that does not fit.
func respond(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("respond", stdout, stderr)
	to := reachFlags(fs)
	session := fs.Bool("session", false, "the answer stands for the same request later in the same session (approve for the session)")
	host := fs.Bool("host", false, "the answer stands for the same request in every session of the host for an hour")
	reason := fs.String("reason", "", "why, in your words: the agent and the audit get it (a deny's reason)")
	as := fs.String("as", "", "`name` recorded as who answered, on a bus without users (default $USER); with users it is the user you connect as")
	pos, err := parse(fs, args)
	if err != nil {
		return usageError(stderr, err)
	}
	if len(pos) != 2 {
		fmt.Fprintln(stderr, `agentmux respond: want an id and an answer: respond -c <manifest> <id> <answer>; the answer is JSON (true, ["a","b"], {"k":1}) or else a string`)
		return exitUsage
	}
	if !requestID.MatchString(pos[0]) {
		fmt.Fprintf(stderr, "agentmux respond: %q is not a request id (h-…); `agentmux pending` lists them\n", pos[0])
		return exitUsage
	}
	c, code := to.client("respond", stderr)
	if c == nil {
		return code
	}
	defer c.close()
	who, err := responder(c, *as)
	if err != nil {
		fmt.Fprintln(stderr, "agentmux respond:", err)
		return exitUsage
	}
	value := json.RawMessage(pos[1])
	if !json.Valid(value) {
		value, _ = json.Marshal(pos[1])
	}
	ctx, cancel := c.timeout(clientTimeout)
	defer cancel()
	scope := ""
	switch {
	case *session && *host:
		fmt.Fprintln(stderr, "agentmux respond: --session or --host, not both")
		return exitUsage
	case *session:
		scope = wire.ScopeSession
	case *host:
		scope = wire.ScopeHost
	}
	req := wire.RespondRequest{Value: value, Reason: *reason, Scope: scope}
	// The start of an id will do, when it starts one waiting request only: found here,
	// so the nodes are asked about the whole id. An id no waiting request starts with
	// goes as given (it may be settled: the node says how).
	id := pos[0]
	full, err := pendingByPrefix(ctx, c, id)
	var ambiguous *ambiguousPrefix
	switch {
	case errors.As(err, &ambiguous):
		fmt.Fprintln(stderr, "agentmux respond:", err)
		return exitUsage
	case full != "":
		id = full
	}
	reply, err := store.Answer(ctx, c.nc, who, id, req)
	if err != nil {
		fmt.Fprintln(stderr, "agentmux respond:", c.explain(err))
		return exitError
	}
	if !reply.OK {
		fmt.Fprintln(stderr, "agentmux respond:", reply.Error)
		if reply.Code == wire.RespondNoSuch || reply.Code == wire.RespondInvalid {
			return exitUsage
		}
		return exitError
	}
	p := reply.Pending
	fmt.Fprintf(stdout, "answered %s (%s %s of session %s) with %s as %s\n", p.ID, p.Type, p.Request, p.Session, value, who)
	return exitOK
}

// responder is who an answer is recorded as: the user the bus knows, or on a bus
// without users the name given (or $USER).
func responder(c *busClient, as string) (string, error) {
	if c.secured {
		if !wire.IsName(c.user) {
			return "", fmt.Errorf("the bus knows you as %q, which cannot be part of a subject: name the user with letters, digits, '_' and '-'", c.user)
		}
		if as != "" && as != c.user {
			return "", fmt.Errorf("--as %q: you are connected as %q, and an answer is recorded as the user who gave it", as, c.user)
		}
		return c.user, nil
	}
	for _, name := range []string{as, os.Getenv("USER"), "operator"} {
		if name != "" {
			if !wire.IsName(name) {
				return "", fmt.Errorf("--as %q: use letters, digits, '_' and '-'", name)
			}
			return name, nil
		}
	}
	return "", nil
}

// pendingByPrefix is the id of the one request waiting for a person whose id starts
// with prefix; "" when none does; an error when several do.
func pendingByPrefix(ctx context.Context, c *busClient, prefix string) (string, error) {
	pending, err := store.OpenPending(ctx, c.js, c.nc)
	if err != nil {
		return "", c.explain(err)
	}
	list, err := pending.List(ctx)
	if err != nil {
		return "", c.explain(err)
	}
	var ids []string
	for _, p := range list {
		if p.State == wire.StatePending {
			ids = append(ids, p.ID)
		}
	}
	return byPrefix(ids, prefix, "waiting requests'")
}
