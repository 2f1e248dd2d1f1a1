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

// calls prints the model calls of a session as the gateway kept them ([gateway] record
// = "full"): each one's model, status and tokens, and with --bodies its request and
// answer. Operators alone may read them.
func calls(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("calls", stdout, stderr)
	to := reachFlags(fs)
	bodies := fs.Bool("bodies", false, "print each call's request and answer under it")
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
		fmt.Fprintln(stderr, "agentmux calls: want a session id (or the start of one): calls -c <manifest> <session> [--bodies]")
		return exitUsage
	}
	c, code := to.client("calls", stderr)
	if c == nil {
		return code
	}
	defer c.close()
	ctx, cancel := c.timeout(clientTimeout)
	defer cancel()
	ids, err := store.ExchangeSessions(ctx, c.js, pos[0])
	if err != nil {
		fmt.Fprintln(stderr, "agentmux calls:", c.explain(err))
		return exitError
	}
	id, err := byPrefix(ids, pos[0], "sessions'")
	switch {
	case err != nil:
		fmt.Fprintln(stderr, "agentmux calls:", err)
		return exitError
	case id == "":
		fmt.Fprintf(stderr, "agentmux calls: no model calls kept for session %q, nor for a session whose id starts with it; they are kept with [gateway] record = \"full\"\n", pos[0])
		return exitError
	}
	xs, err := store.ReadExchanges(ctx, c.js, id)
	if err != nil {
		fmt.Fprintln(stderr, "agentmux calls:", c.explain(err))
		return exitError
	}
	if form == outJSON {
		return jsonLines(stdout, xs)
	}
	rows := make([][]string, 0, len(xs))
	for _, x := range xs {
		rows = append(rows, callRow(x, form == outWide))
	}
	header := []string{"TIME", "ATTEMPT", "MODEL", "STATUS", "TOOK", "TOKENS", "REQUEST", "ANSWER"}
	if form == outWide {
		header = append(header, "NODE", "PATH", "FINISH")
	}
	if !*bodies {
		return table(stdout, header, rows)
	}
	for i, x := range xs {
		if code := table(stdout, header, rows[i:i+1]); code != exitOK {
			return code
		}
		fmt.Fprintf(stdout, "--- request%s\n%s\n--- answer%s\n%s\n\n", cut(x.RequestCut, len(x.Request), x.RequestBytes), strings.TrimRight(x.Request, "\n"),
			cut(x.ResponseCut, len(x.Response), x.ResponseBytes), strings.TrimRight(x.Response, "\n"))
	}
	return exitOK
}

// callRow is one call as a row of the table.
func callRow(x *wire.ModelExchange, wide bool) []string {
	tokens := "-"
	if u := x.Call.Usage; u != nil {
		tokens = fmt.Sprintf("%d in, %d out", u.Input+u.CacheRead+u.CacheWrite, u.Output)
	}
	row := []string{time.UnixMilli(x.Time).UTC().Format(time.RFC3339), strconv.Itoa(x.Attempt), x.Call.Connection + "/" + x.Call.Model,
		strconv.Itoa(x.Call.Status), (time.Duration(x.Call.TookMs) * time.Millisecond).String(), tokens, size(x.RequestBytes), size(x.ResponseBytes)}
	if wide {
		row = append(row, x.Node, x.Method+" "+x.Path, strings.Join(x.Call.Finish, ","))
	}
	return row
}

// cut says how much of a body was kept, when not all of it.
func cut(was bool, kept int, whole int64) string {
	if !was {
		return ""
	}
	return fmt.Sprintf(" (the first %s of %s)", size(int64(kept)), size(whole))
}

func size(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
