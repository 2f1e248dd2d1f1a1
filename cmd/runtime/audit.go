package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

func audit(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("audit", stdout, stderr)
	path := fs.String("c", "agentmux.toml", "manifest `file`")
	asJSON := fs.Bool("json", false, "print the records as JSON lines")
	pos, err := parse(fs, args)
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
		fmt.Fprintf(stderr, "agentmux audit: no audit records for session %q\n", pos[0])
		return exitError
	}
	if *asJSON {
		return jsonLines(stdout, records)
	}
	printAudit(stdout, records)
	return exitOK
}

func printAudit(w io.Writer, records []*wire.AuditRecord) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tATTEMPT\tEVENT\tREQUEST\tDETAIL")
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
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", at, r.Attempt, r.Kind, r.Request, detail)
	}
	_ = tw.Flush()
}

// decider is who answered, with what an external supervisor claimed kept apart.
func decider(r *wire.AuditRecord) string {
	if r.Claimed != "" {
		return fmt.Sprintf("%s (claims %s)", r.Decider, r.Claimed)
	}
	return r.Decider
}
