package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

func audit(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("audit", stdout, stderr)
	path := fs.String("c", "agentmux.toml", "manifest `file`")
	out := newOutputFlags(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return usageError(stderr, err)
	}
	form, err := out.form()
	if err != nil {
		return usageError(stderr, err)
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "agentmux audit: want a session id: audit -c <manifest> <session>")
		return exitUsage
	}
	c, code := client("audit", *path, stderr)
	if c == nil {
		return code
	}
	defer c.close()
	ctx, cancel := c.timeout(clientTimeout)
	defer cancel()
	records, err := store.ReadAudit(ctx, c.js, pos[0])
	if err != nil {
		fmt.Fprintln(stderr, "agentmux audit:", c.explain(err))
		return exitError
	}
	if len(records) == 0 {
		// Not a session's whole id: the start of one will do, if it starts one only.
		ids, err := store.AuditSessions(ctx, c.js, pos[0])
		if err != nil {
			fmt.Fprintln(stderr, "agentmux audit:", c.explain(err))
			return exitError
		}
		switch len(ids) {
		case 0:
			fmt.Fprintf(stderr, "agentmux audit: no audit records for session %q, nor for a session whose id starts with it\n", pos[0])
			return exitError
		case 1:
			if records, err = store.ReadAudit(ctx, c.js, ids[0]); err != nil {
				fmt.Fprintln(stderr, "agentmux audit:", c.explain(err))
				return exitError
			}
		default:
			fmt.Fprintf(stderr, "agentmux audit: %q starts %d sessions' ids (%s): give more of it\n", pos[0], len(ids), strings.Join(ids[:min(5, len(ids))], ", "))
			return exitError
		}
	}
	if form == outJSON {
		return jsonLines(stdout, records)
	}
	return printAudit(stdout, records, form == outWide)
}

// printAudit prints records as a table; wide, with the node and member of each and
// nothing cut short.
func printAudit(w io.Writer, records []*wire.AuditRecord, wide bool) int {
	oneLine := oneLine
	header := []string{"TIME", "ATTEMPT", "EVENT", "REQUEST", "DETAIL"}
	if wide {
		oneLine = func(s string, _ int) string { return strings.Join(strings.Fields(s), " ") }
		header = []string{"TIME", "ATTEMPT", "NODE", "EVENT", "REQUEST", "DETAIL"}
	}
	rows := make([][]string, 0, len(records))
	for _, r := range records {
		at := time.UnixMilli(r.Time).Format("15:04:05.000")
		var detail string
		switch r.Kind {
		case "session.started":
			detail = fmt.Sprintf("host %s on node %s: %s", r.Host, r.Node, oneLine(r.Text, 60))
		case "request":
			detail = fmt.Sprintf("%s: %s", r.Type, oneLine(r.Text, 80))
		case "answer":
			detail = fmt.Sprintf("%s %s by %s in %.0fms", r.Value, r.Outcome, decider(r), r.Latency)
			if r.Asked != 0 { // the request's one record: what was asked, then the answer
				detail = fmt.Sprintf("%s: %s → %s", r.Type, oneLine(r.Text, 80), detail)
			}
			if r.Reason != "" {
				detail += ": " + oneLine(r.Reason, 80)
			}
		case "answer.refused":
			detail = fmt.Sprintf("%s by %s from node %s refused: %s", r.Value, decider(r), r.Member, r.Reason)
		case "session.ended":
			detail = fmt.Sprintf("%s on node %s in %.1fs", r.Outcome, r.Node, r.Duration/1000)
			switch {
			case r.Error != "":
				detail += ": " + r.Error
			case len(r.Value) > 0:
				detail += ": " + oneLine(string(r.Value), 100)
			}
		}
		if wide {
			at = time.UnixMilli(r.Time).UTC().Format("2006-01-02T15:04:05.000Z")
			rows = append(rows, []string{at, strconv.Itoa(r.Attempt), dash(r.Node), r.Kind, dash(r.Request), detail})
			continue
		}
		rows = append(rows, []string{at, strconv.Itoa(r.Attempt), r.Kind, r.Request, detail})
	}
	return table(w, header, rows)
}

// decider is who answered, with what an external supervisor claimed kept apart.
func decider(r *wire.AuditRecord) string {
	if r.Claimed != "" {
		return fmt.Sprintf("%s (claims %s)", r.Decider, r.Claimed)
	}
	return r.Decider
}
