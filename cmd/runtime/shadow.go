package main

import (
	"fmt"
	"io"
	"time"

	"github.com/agentmux/agentmux/policy"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// shadowPolicy prints how the routes' shadow supervisors decided beside the answers
// given: each one's agreement, and the requests where they disagreed.
func shadowPolicy(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("policy shadow", stdout, stderr)
	path := fs.String("c", "agentmux.toml", "manifest `file`")
	since := fs.String("since", "7d", "from `when`: a duration before now (7d, 24h) or an RFC 3339 time")
	supervisor := fs.String("supervisor", "", "only shadow `supervisor`'s decisions")
	out := newOutputFlags(fs)
	form, from, err := policyArgs(fs, "shadow", args, out, since, nil)
	if err != nil {
		return usageError(stderr, err)
	}
	c, code := client("policy", *path, stderr)
	if c == nil {
		return code
	}
	defer c.close()
	ctx, cancel := c.timeout(searchTimeout)
	defer cancel()
	var records []*wire.AuditRecord
	err = store.SearchAudit(ctx, c.nc, store.AuditQuery{Kind: "shadow", Since: from}, func(r *wire.AuditRecord) error {
		if *supervisor == "" || policy.ShadowOf(r) == *supervisor {
			records = append(records, r)
		}
		return nil
	})
	if err != nil {
		fmt.Fprintln(stderr, "agentmux policy:", c.explain(err))
		return exitError
	}
	list, disagreed := policy.Shadows(records)
	if form == outJSON {
		if code := jsonLines(stdout, list); code != exitOK {
			return code
		}
		return jsonLines(stdout, disagreed)
	}
	if len(list) == 0 {
		fmt.Fprintf(stdout, "no shadow decisions since %s: name a shadow on a route ([[routes]] shadow = \"s\")\n", from.UTC().Format(time.RFC3339))
		return exitOK
	}
	rows := make([][]string, 0, len(list))
	for _, t := range list {
		rows = append(rows, []string{t.Supervisor, fmt.Sprint(t.Decided), fmt.Sprint(t.Agreed), fmt.Sprint(t.Disagreed), fmt.Sprint(t.NoAnswer), fmt.Sprintf("%.0f%%", 100*t.Agreement)})
	}
	if code := table(stdout, []string{"SHADOW", "DECIDED", "AGREED", "DISAGREED", "NO ANSWER", "AGREEMENT"}, rows); code != exitOK || len(disagreed) == 0 {
		return code
	}
	fmt.Fprintln(stdout, "\ndisagreements:")
	rows = rows[:0]
	for _, r := range disagreed {
		text := r.Text
		if form != outWide {
			text = oneLine(text, 50)
		}
		rows = append(rows, []string{time.UnixMilli(r.Time).UTC().Format("2006-01-02 15:04"), r.Session, r.Request, text, string(r.Value) + " by " + r.Decider, r.Reason})
	}
	return table(stdout, []string{"TIME", "SESSION", "REQUEST", "TEXT", "SHADOW", "GIVEN"}, rows)
}
