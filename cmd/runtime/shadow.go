package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentmux/agentmux/policy"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// shadowPolicy prints how the routes' shadow supervisors decided beside the answers
// given: each one's agreement, whether it is promoted, and the requests where they
// disagreed.
func shadowPolicy(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("policy shadow", stdout, stderr)
	to := reachFlags(fs)
	since := fs.String("since", "7d", "from `when`: a duration before now (7d, 24h) or an RFC 3339 time")
	supervisor := fs.String("supervisor", "", "only shadow `supervisor`'s decisions")
	out := newOutputFlags(fs)
	form, from, err := policyArgs(fs, "shadow", args, out, since, nil)
	if err != nil {
		return usageError(stderr, err)
	}
	c, code := to.client("policy", stderr)
	if c == nil {
		return code
	}
	defer c.close()
	ctx, cancel := c.timeout(searchTimeout)
	defer cancel()
	list, disagreed, err := policy.ReadShadows(ctx, c.nc, from, *supervisor)
	if err != nil {
		fmt.Fprintln(stderr, "agentmux policy:", c.explain(err))
		return exitError
	}
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
		promoted := ""
		if p := t.Promoted; p != nil {
			promoted = strings.TrimPrefix(p.By, "human:") + " " + time.UnixMilli(p.At).UTC().Format("2006-01-02 15:04")
		}
		rows = append(rows, []string{t.Supervisor, fmt.Sprint(t.Decided), fmt.Sprint(t.Agreed), fmt.Sprint(t.Disagreed), fmt.Sprint(t.NoAnswer),
			fmt.Sprintf("%.0f%%", 100*t.Agreement), fmt.Sprint(t.AllowsDenied), promoted})
	}
	header := []string{"SHADOW", "DECIDED", "AGREED", "DISAGREED", "NO ANSWER", "AGREEMENT", "ALLOWS DENIED", "PROMOTED"}
	if code := table(stdout, header, rows); code != exitOK || len(disagreed) == 0 {
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

// promotePolicy promotes a shadow supervisor fleet-wide, when its record since --since
// clears the bar (policy.Bar), or demotes one.
func promotePolicy(verb string, args []string, stdout, stderr io.Writer) int {
	demote := verb == "demote"
	fs := newFlags("policy "+verb, stdout, stderr)
	to := reachFlags(fs)
	note := fs.String("note", "", "why, for the audit")
	as := fs.String("as", "", "`name` recorded as who "+verb+"d it, on a bus without users (default $USER)")
	var since *string
	var bar policy.Bar
	if !demote {
		since = fs.String("since", "7d", "judge its shadow decisions from `when`: a duration before now (7d, 24h) or an RFC 3339 time")
		fs.Float64Var(&bar.MinAgreement, "min-agreement", policy.DefaultMinAgreement, "promote only if it agreed with the answers given on this `share` (0 to 1) of its answers")
		fs.IntVar(&bar.MinDecided, "min-decisions", policy.DefaultMinDecided, "… of at least `n` answers")
	}
	shadow, from, err := promoteArgs(fs, verb, args, since, &bar)
	if err != nil {
		return usageError(stderr, err)
	}
	c, code := to.client("policy", stderr)
	if c == nil {
		return code
	}
	defer c.close()
	who, err := responder(c, *as)
	if err != nil {
		fmt.Fprintln(stderr, "agentmux policy:", err)
		return exitUsage
	}
	ctx, cancel := c.timeout(searchTimeout)
	defer cancel()
	var reply *wire.ShadowPromoteReply
	if demote {
		reply, err = store.PromoteShadow(ctx, c.nc, shadow, who, &wire.ShadowPromote{Demote: true, Note: *note})
	} else {
		reply, err = policy.Promote(ctx, c.nc, shadow, who, *note, from, bar)
	}
	switch {
	case err != nil:
		fmt.Fprintln(stderr, "agentmux policy:", c.explain(err))
		return exitError
	case reply.Error != "":
		fmt.Fprintf(stderr, "agentmux policy: %s: %s\n", reply.Node, reply.Error)
		return exitError
	case demote:
		fmt.Fprintf(stdout, "%s demoted by %s (promoted by %s): every node decides its routes as its manifest says\n", shadow, who, reply.Promotion.By)
	default:
		fmt.Fprintf(stdout, "%s promoted by %s, agreeing %.1f%% of %d answers; on node %s: %s. Every node decides the routes that shadow it by it; `agentmux policy demote %s` undoes it\n",
			shadow, who, 100*reply.Promotion.Agreement, reply.Promotion.Decided, reply.Node, strings.Join(reply.Routes, "; "), shadow)
	}
	return exitOK
}

// promoteArgs parses `agentmux policy promote|demote <shadow>`: the shadow, and the
// time --since names (promote).
func promoteArgs(fs *flag.FlagSet, verb string, args []string, since *string, bar *policy.Bar) (string, time.Time, error) {
	pos, err := parse(fs, args)
	switch {
	case err != nil:
		return "", time.Time{}, err
	case len(pos) != 1 || !wire.IsName(pos[0]):
		return "", time.Time{}, fmt.Errorf("agentmux policy %s takes one shadow supervisor's name", verb)
	case bar.MinAgreement < 0 || bar.MinAgreement > 1:
		return "", time.Time{}, fmt.Errorf("--min-agreement %v: give a share from 0 to 1", bar.MinAgreement)
	case bar.MinDecided < 0:
		return "", time.Time{}, fmt.Errorf("--min-decisions %d: give a count, 0 or more", bar.MinDecided)
	case since == nil:
		return pos[0], time.Time{}, nil
	}
	from, err := store.ParseTimeBound(*since, time.Now())
	if err != nil {
		return "", time.Time{}, fmt.Errorf("--since %w", err)
	}
	return pos[0], from, nil
}
