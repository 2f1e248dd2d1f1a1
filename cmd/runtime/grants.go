package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// grantsCommand lists the answers standing for a session or a host, or revokes one.
func grantsCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "revoke" {
		return revokeGrant(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "list" {
		args = args[1:]
	}
	fs := newFlags("grants", stdout, stderr)
	to := reachFlags(fs)
	out := newOutputFlags(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return usageError(stderr, err)
	}
	if len(pos) > 0 {
		return usageError(stderr, fmt.Errorf("%q: want `agentmux grants [list]` or `agentmux grants revoke <id>`", pos[0]))
	}
	form, err := out.form()
	if err != nil {
		return usageError(stderr, err)
	}
	c, code := to.client("grants", stderr)
	if c == nil {
		return code
	}
	defer c.close()
	ctx, cancel := c.timeout(clientTimeout)
	defer cancel()
	msg, err := c.nc.RequestWithContext(ctx, wire.GrantsSubject, nil)
	if errors.Is(err, nats.ErrNoResponders) {
		err = errors.New("no node answered: is `agentmux up` running with this manifest?")
	}
	var reply wire.GrantsReply
	if err == nil {
		err = json.Unmarshal(msg.Data, &reply)
	}
	if err != nil {
		fmt.Fprintln(stderr, "agentmux grants:", c.explain(err))
		return exitError
	}
	if form == outJSON {
		return jsonLines(stdout, reply.Grants)
	}
	if len(reply.Grants) == 0 {
		fmt.Fprintln(stdout, "no answer stands for more than its request")
		return exitOK
	}
	rows := make([][]string, 0, len(reply.Grants))
	for _, g := range reply.Grants {
		until := "the session's end"
		if !g.Expires.IsZero() {
			until = g.Expires.Local().Format(time.DateTime)
		}
		of := "session " + g.Session
		if g.Scope == wire.ScopeHost {
			of = "host " + g.Host
		}
		text := g.Type + ": " + g.Text
		if form != outWide {
			text = oneLine(text, 80)
		}
		rows = append(rows, []string{g.ID, of, text, string(g.Value), g.By, until})
	}
	return table(stdout, []string{"ID", "FOR", "REQUEST", "ANSWER", "BY", "UNTIL"}, rows)
}

// revokeGrant revokes a grant as the person answering: its requests are asked again.
func revokeGrant(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("grants revoke", stdout, stderr)
	to := reachFlags(fs)
	as := fs.String("as", "", "`name` recorded as who revoked it, on a bus without users (default $USER)")
	pos, err := parse(fs, args)
	if err != nil {
		return usageError(stderr, err)
	}
	if len(pos) != 1 || !wire.IsGrantID(pos[0]) || !wire.IsName(pos[0]) {
		return usageError(stderr, fmt.Errorf("want a grant's id (g-…): `agentmux grants` lists them"))
	}
	c, code := to.client("grants", stderr)
	if c == nil {
		return code
	}
	defer c.close()
	who, err := responder(c, *as)
	if err != nil {
		fmt.Fprintln(stderr, "agentmux grants revoke:", err)
		return exitUsage
	}
	ctx, cancel := c.timeout(clientTimeout)
	defer cancel()
	reply, err := store.Revoke(ctx, c.nc, who, pos[0])
	if err != nil {
		fmt.Fprintln(stderr, "agentmux grants revoke:", c.explain(err))
		return exitError
	}
	if !reply.OK {
		fmt.Fprintln(stderr, "agentmux grants revoke:", reply.Error)
		if reply.Code == wire.RespondNoSuch {
			return exitUsage
		}
		return exitError
	}
	g := reply.Grant
	fmt.Fprintf(stdout, "revoked %s (%s's %s answer to %s: %s) as %s\n", g.ID, g.By, g.Scope, g.Type, strings.TrimSpace(oneLine(g.Text, 80)), who)
	return exitOK
}
