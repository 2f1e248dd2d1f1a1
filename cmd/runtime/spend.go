package main

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// spend lists what each host's sessions cost each day, fleet-wide.
func spend(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("spend", stdout, stderr)
	to := reachFlags(fs)
	days := fs.Int("days", 7, "the last `n` days, today (UTC) included")
	host := fs.String("host", "", "only this `host`")
	out := newOutputFlags(fs)
	pos, err := parse(fs, args)
	if err == nil && len(pos) > 0 {
		err = fmt.Errorf("%q: agentmux spend takes flags only", pos[0])
	}
	if err == nil && (*days < 1 || *days > 400) {
		err = fmt.Errorf("--days %d: give 1 to 400 (the days kept)", *days)
	}
	if err != nil {
		return usageError(stderr, err)
	}
	form, err := out.form()
	if err != nil {
		return usageError(stderr, err)
	}
	c, code := to.client("spend", stderr)
	if c == nil {
		return code
	}
	defer c.close()
	ctx, cancel := c.timeout(clientTimeout)
	defer cancel()
	list, err := store.ReadSpend(ctx, c.nc, time.Now().UTC().AddDate(0, 0, 1-*days))
	if err != nil {
		fmt.Fprintln(stderr, "agentmux spend:", c.explain(err))
		return exitError
	}
	var rows []*wire.DailySpend
	for _, d := range list {
		if *host == "" || d.Host == *host {
			rows = append(rows, d)
		}
	}
	if form == outJSON {
		return jsonLines(stdout, rows)
	}
	if len(rows) == 0 {
		fmt.Fprintf(stdout, "no session reported a spend in the last %d days\n", *days)
		return exitOK
	}
	header := []string{"DAY", "HOST", "SESSIONS", "COST", "TOKENS"}
	if form == outWide {
		header = append(header, "INPUT", "OUTPUT", "CACHE READ", "CACHE WRITE", "UNPRICED SESSIONS")
	}
	lines := make([][]string, 0, len(rows)+1)
	var total wire.DailySpend
	for _, d := range rows {
		lines = append(lines, spendRow(d, form))
		total.Merge(d)
	}
	total.Day, total.Host = "total", "-"
	lines = append(lines, spendRow(&total, form))
	return table(stdout, header, lines)
}

func spendRow(d *wire.DailySpend, form string) []string {
	cost := fmt.Sprintf("$%.4f", d.CostUSD)
	if d.Unpriced > 0 {
		cost += "+"
	}
	tokens := d.InputTokens + d.OutputTokens + d.CacheReadTokens + d.CacheWriteTokens
	row := []string{d.Day, d.Host, strconv.FormatInt(d.Sessions, 10), cost, strconv.FormatInt(tokens, 10)}
	if form == outWide {
		for _, n := range []int64{d.InputTokens, d.OutputTokens, d.CacheReadTokens, d.CacheWriteTokens, d.Unpriced} {
			row = append(row, strconv.FormatInt(n, 10))
		}
	}
	return row
}
