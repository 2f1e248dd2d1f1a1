package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// searchTimeout bounds a search of the audit across sessions: it reads one record a
// request.
const searchTimeout = 5 * time.Minute

// audit prints one session's trail, or searches the audit across sessions.
func audit(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("audit", stdout, stderr)
	to := reachFlags(fs)
	var q store.AuditQuery
	fs.StringVar(&q.Host, "host", "", "only the records of this `host`")
	fs.StringVar(&q.Kind, "kind", "", "only records of this `kind`: session.started, request, answer, answer.refused or session.ended")
	fs.StringVar(&q.Type, "type", "", "only requests of this `type`: question, approval or tool_call")
	fs.StringVar(&q.Decider, "decider", "", "only answers by this `decider`: a kind (human, rule, llm, default, …) or one (human:alice, rule:policy)")
	fs.StringVar(&q.User, "by", "", "only answers this `person` gave (decider human:<person>)")
	since := fs.String("since", "", "from this `time`: a duration before now (24h) or an RFC 3339 time; without a session, 24h unless given")
	until := fs.String("until", "", "before this `time`, as --since; default now")
	out := newOutputFlags(fs, outCSV)
	pos, err := parse(fs, args)
	if err != nil {
		return usageError(stderr, err)
	}
	form, err := out.form()
	if err != nil {
		return usageError(stderr, err)
	}
	if len(pos) > 1 {
		fmt.Fprintln(stderr, "agentmux audit: want one session id, or none to search: audit -c <manifest> [<session>] [--host h] [--decider d] [--since 24h]")
		return exitUsage
	}
	now := time.Now()
	if *since == "" && len(pos) == 0 {
		*since = "24h"
	}
	if q.Since, err = store.ParseTimeBound(*since, now); err != nil {
		return usageError(stderr, fmt.Errorf("--since %w", err))
	}
	if q.Until, err = store.ParseTimeBound(*until, now); err != nil {
		return usageError(stderr, fmt.Errorf("--until %w", err))
	}
	c, code := to.client("audit", stderr)
	if c == nil {
		return code
	}
	defer c.close()
	var records []*wire.AuditRecord
	if len(pos) == 1 {
		ctx, cancel := c.timeout(clientTimeout)
		defer cancel()
		all, code := sessionAudit(ctx, c, pos[0], stderr)
		if code != exitOK {
			return code
		}
		for _, r := range all {
			if q.Keeps(r) {
				records = append(records, r)
			}
		}
	} else {
		ctx, cancel := c.timeout(searchTimeout)
		defer cancel()
		err := store.SearchAudit(ctx, c.nc, q, func(r *wire.AuditRecord) error {
			records = append(records, r)
			return nil
		})
		if err != nil {
			fmt.Fprintln(stderr, "agentmux audit:", c.explain(err))
			return exitError
		}
	}
	switch form {
	case outJSON:
		return jsonLines(stdout, records)
	case outCSV:
		return auditCSV(stdout, records)
	}
	if len(records) == 0 && len(pos) == 0 {
		fmt.Fprintf(stdout, "no audit records match, from %s\n", q.Since.Format(time.RFC3339))
		return exitOK
	}
	return printAudit(stdout, records, form == outWide, len(pos) == 0)
}

// sessionAudit is the trail of the session id names: its whole id, or the start of
// one session's only.
func sessionAudit(ctx context.Context, c *busClient, id string, stderr io.Writer) ([]*wire.AuditRecord, int) {
	records, err := store.ReadAudit(ctx, c.js, id)
	if err != nil {
		fmt.Fprintln(stderr, "agentmux audit:", c.explain(err))
		return nil, exitError
	}
	if len(records) > 0 {
		return records, exitOK
	}
	ids, err := store.AuditSessions(ctx, c.js, id)
	if err != nil {
		fmt.Fprintln(stderr, "agentmux audit:", c.explain(err))
		return nil, exitError
	}
	found, err := byPrefix(ids, id, "sessions'")
	switch {
	case err != nil:
		fmt.Fprintln(stderr, "agentmux audit:", err)
		return nil, exitError
	case found == "":
		fmt.Fprintf(stderr, "agentmux audit: no audit records for session %q, nor for a session whose id starts with it\n", id)
		return nil, exitError
	}
	if records, err = store.ReadAudit(ctx, c.js, found); err != nil {
		fmt.Fprintln(stderr, "agentmux audit:", c.explain(err))
		return nil, exitError
	}
	return records, exitOK
}

// auditCSV writes records as CSV with a header: a spreadsheet's view of the audit.
func auditCSV(w io.Writer, records []*wire.AuditRecord) int {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"time", "session", "attempt", "node", "host", "pipeline", "stage", "kind", "request", "type", "text",
		"value", "outcome", "decider", "claimed", "reason", "latency_ms", "duration_ms", "error"})
	for _, r := range records {
		_ = cw.Write([]string{time.UnixMilli(r.Time).UTC().Format("2006-01-02T15:04:05.000Z"), r.Session, strconv.Itoa(r.Attempt), r.Node,
			r.Host, r.Pipeline, r.Stage, r.Kind, r.Request, r.Type, r.Text, string(r.Value), r.Outcome, r.Decider, r.Claimed, r.Reason,
			number(r.Latency), number(r.Duration), r.Error})
	}
	cw.Flush()
	if cw.Error() != nil {
		return exitError
	}
	return exitOK
}

func number(f float64) string {
	if f == 0 {
		return ""
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// printAudit prints records as a table; wide, with the node of each and nothing cut
// short; sessions, with the session of each (a search across sessions).
func printAudit(w io.Writer, records []*wire.AuditRecord, wide, sessions bool) int {
	oneLine := oneLine
	header := []string{"TIME", "ATTEMPT", "EVENT", "REQUEST", "DETAIL"}
	if wide {
		oneLine = func(s string, _ int) string { return strings.Join(strings.Fields(s), " ") }
		header = []string{"TIME", "ATTEMPT", "NODE", "EVENT", "REQUEST", "DETAIL"}
	}
	if sessions {
		header = append([]string{header[0], "SESSION"}, header[1:]...)
	}
	rows := make([][]string, 0, len(records))
	for _, r := range records {
		at := time.UnixMilli(r.Time).Format("15:04:05.000")
		var detail string
		switch r.Kind {
		case "session.started":
			detail = fmt.Sprintf("host %s on node %s: %s", r.Host, r.Node, oneLine(r.Text, 60))
			switch {
			case r.By != "" && r.Claimed != "":
				detail += " (by " + r.By + ", claims " + r.Claimed + ")"
			case r.By != "":
				detail += " (by " + r.By + ")"
			case r.Claimed != "":
				detail += " (claimed by " + r.Claimed + ", vouched for by nobody)"
			}
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
		if wide || sessions {
			at = time.UnixMilli(r.Time).UTC().Format("2006-01-02T15:04:05.000Z")
		}
		row := []string{at, strconv.Itoa(r.Attempt), r.Kind, r.Request, detail}
		if wide {
			row = []string{at, strconv.Itoa(r.Attempt), dash(r.Node), r.Kind, dash(r.Request), detail}
		}
		if sessions {
			row = append([]string{row[0], r.Session}, row[1:]...)
		}
		rows = append(rows, row)
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
