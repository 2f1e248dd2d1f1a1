package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// budgetCommand lists each host's daily budget today (UTC), fleet-wide, or raises or
// resets one.
func budgetCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "raise":
			return raiseBudget(args[1:], stdout, stderr, false)
		case "reset":
			return raiseBudget(args[1:], stdout, stderr, true)
		case "list":
			args = args[1:]
		}
	}
	fs := newFlags("budget", stdout, stderr)
	to := reachFlags(fs)
	out := newOutputFlags(fs)
	pos, err := parse(fs, args)
	if err == nil && len(pos) > 0 {
		err = fmt.Errorf("%q: want `agentmux budget`, `agentmux budget raise --host h --usd n` or `agentmux budget reset --host h`", pos[0])
	}
	if err != nil {
		return usageError(stderr, err)
	}
	form, err := out.form()
	if err != nil {
		return usageError(stderr, err)
	}
	c, code := to.client("budget", stderr)
	if c == nil {
		return code
	}
	defer c.close()
	ctx, cancel := c.timeout(clientTimeout)
	defer cancel()
	days, err := store.ReadSpend(ctx, c.nc, time.Now())
	if err != nil {
		fmt.Fprintln(stderr, "agentmux budget:", c.explain(err))
		return exitError
	}
	fb, err := c.fleetBudget(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "agentmux budget:", c.explain(err))
		return exitError
	}
	rows := fb.today(days, time.Now())
	if form == outJSON {
		return jsonLines(stdout, rows)
	}
	if fb.usd == 0 {
		fmt.Fprintln(stdout, "no daily budget: the manifest has no [budgets.daily]")
	}
	lines := make([][]string, 0, len(rows))
	for _, r := range rows {
		lines = append(lines, []string{r.Day, r.Host, fmt.Sprintf("$%.4f", r.CostUSD), dollars(r.LimitUSD), dollars(r.RaisedUSD), r.State})
	}
	return table(stdout, []string{"DAY", "HOST", "SPENT", "BUDGET", "RAISED", "TASKS"}, lines)
}

// fleetBudget is the fleet's hosts and their daily budget: the manifest's, or, reached
// without one, what the live nodes say in their heartbeats.
type fleetBudget struct {
	hosts []string
	usd   float64 // 0: none
}

func (c *busClient) fleetBudget(ctx context.Context) (fleetBudget, error) {
	if m := c.fleet.m; m != nil {
		return fleetBudget{hosts: m.HostNames(), usd: m.Budgets.DailyUSD()}, nil
	}
	nodes, err := store.OpenNodes(ctx, c.js)
	if err != nil {
		return fleetBudget{}, err
	}
	list, now, err := nodes.List(ctx)
	if err != nil {
		return fleetBudget{}, err
	}
	var fb fleetBudget
	for _, n := range list {
		if !n.Alive(now) {
			continue
		}
		fb.usd = max(fb.usd, n.DailyUSD)
		for _, h := range n.Hosts {
			if !slices.Contains(fb.hosts, h.Name) {
				fb.hosts = append(fb.hosts, h.Name)
			}
		}
	}
	return fb, nil
}

// today is each host's day today against its daily budget, by host.
func (fb fleetBudget) today(days []*wire.DailySpend, now time.Time) []*wire.DailyBudget {
	return wire.DailyBudgets(fb.hosts, fb.usd, days, now)
}

func dollars(f float64) string {
	if f == 0 {
		return "-"
	}
	return fmt.Sprintf("$%.2f", f)
}

// raiseBudget raises a host's daily budget for today, fleet-wide, in the caller's name;
// with reset, it releases what the host spent so far today, whatever it came to (a
// figure an agent inflated, a runaway day), so its held tasks run.
func raiseBudget(args []string, stdout, stderr io.Writer, reset bool) int {
	verb := "raise"
	if reset {
		verb = "reset"
	}
	fs := newFlags("budget "+verb, stdout, stderr)
	to := reachFlags(fs)
	host := fs.String("host", "", "the `host` whose daily budget to "+verb)
	usd := new(float64)
	if !reset {
		fs.Float64Var(usd, "usd", 0, "how many US `dollars` to raise it by, for today (UTC)")
	}
	note := fs.String("note", "", "`why`, kept in the audit")
	as := fs.String("as", "", "`name` recorded as who did it, on a bus without users (default $USER)")
	pos, err := parse(fs, args)
	switch {
	case err != nil:
	case len(pos) > 0:
		err = fmt.Errorf("%q: agentmux budget %s takes flags only", pos[0], verb)
	case !wire.IsName(*host):
		err = fmt.Errorf("name the host: --host h")
	default:
		if cerr := (&wire.BudgetRaise{USD: *usd, Reset: reset}).Check(); cerr != nil {
			err = fmt.Errorf("--usd %w", cerr)
		}
	}
	if err != nil {
		return usageError(stderr, err)
	}
	c, code := to.client("budget", stderr)
	if c == nil {
		return code
	}
	defer c.close()
	who, err := responder(c, *as)
	if err != nil {
		fmt.Fprintln(stderr, "agentmux budget:", err)
		return exitUsage
	}
	ctx, cancel := c.timeout(clientTimeout)
	defer cancel()
	reply, err := store.RaiseDaily(ctx, c.nc, *host, who, &wire.BudgetRaise{USD: *usd, Reset: reset, Note: *note})
	if err != nil {
		fmt.Fprintln(stderr, "agentmux budget:", c.explain(err))
		return exitError
	}
	if reply.Error != "" {
		fmt.Fprintf(stderr, "agentmux budget: %s: %s\n", reply.Node, reply.Error)
		return exitError
	}
	if reset {
		fmt.Fprintf(stdout, "%s's daily spend on %s reset: $%.4f released, its $%.2f budget whole again; its waiting tasks run (%s)\n",
			*host, reply.Day.Day, reply.Day.Raises[len(reply.Day.Raises)-1].USD, reply.Limit, reply.Node)
		return exitOK
	}
	fmt.Fprintf(stdout, "%s's daily budget on %s raised by $%.2f to $%.2f ($%.4f spent); its waiting tasks run (%s)\n",
		*host, reply.Day.Day, *usd, reply.Limit, reply.Day.CostUSD-reply.Day.ReleasedUSD, reply.Node)
	return exitOK
}
