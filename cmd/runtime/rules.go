package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nuid"

	"github.com/agentmux/agentmux/permission"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// rulesCommand lists the rules files of the fleet's rule supervisors, or changes one on
// every node that runs it.
func rulesCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "allow", "ask", "deny", "remove":
			return changeRules(args[0], args[1:], stdout, stderr)
		case "list":
			args = args[1:]
		}
	}
	fs := newFlags("rules", stdout, stderr)
	to := reachFlags(fs)
	out := newOutputFlags(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return usageError(stderr, err)
	}
	if len(pos) > 0 {
		return usageError(stderr, fmt.Errorf("%q: want `agentmux rules [list]`, or `agentmux rules allow|ask|deny|remove --supervisor s <rule>…`", pos[0]))
	}
	form, err := out.form()
	if err != nil {
		return usageError(stderr, err)
	}
	c, code := to.client("rules", stderr)
	if c == nil {
		return code
	}
	defer c.close()
	ctx, cancel := c.timeout(clientTimeout)
	defer cancel()
	replies, err := store.ListRules(ctx, c.nc, c.js)
	if err != nil {
		fmt.Fprintln(stderr, "agentmux rules:", c.explain(err))
		return exitError
	}
	slices.SortFunc(replies, func(a, b *wire.RulesReply) int { return strings.Compare(a.Node, b.Node) })
	if form == outJSON {
		return jsonLines(stdout, replies)
	}
	var rows [][]string
	for _, r := range replies {
		for _, f := range r.Files {
			if f.Error != "" {
				rows = append(rows, []string{r.Node, f.Supervisor, "-", "-", "-", "-", f.Error})
				continue
			}
			for _, v := range permission.Verdicts() {
				for _, e := range f.Rules.Entries(v) {
					since := "-"
					if !e.At.IsZero() {
						since = e.At.Local().Format(time.DateTime)
					}
					note := e.Note
					if form != outWide {
						note = oneLine(note, 40)
					}
					rows = append(rows, []string{r.Node, f.Supervisor, string(v), e.Rule, dash(e.By), since, dash(note)})
				}
			}
		}
	}
	if len(rows) == 0 {
		fmt.Fprintln(stdout, "no rules file holds a rule (a rule supervisor keeps them with rules_file)")
		return exitOK
	}
	return table(stdout, []string{"NODE", "SUPERVISOR", "VERDICT", "RULE", "BY", "SINCE", "NOTE"}, rows)
}

// changeRules adds rules to a supervisor's rules file for verdict (allow, ask, deny), or
// removes them, on every live node that runs the supervisor; each reloads.
func changeRules(verb string, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("rules "+verb, stdout, stderr)
	to := reachFlags(fs)
	sup := fs.String("supervisor", "", "the rule `supervisor` whose rules file keeps them")
	from := fs.String("verdict", "", "remove: the `list` they are on (allow, ask or deny)")
	note := fs.String("note", "", "`why`, kept beside each rule")
	as := fs.String("as", "", "`name` recorded as who changed them, on a bus without users (default $USER)")
	pos, err := parse(fs, args)
	if err != nil {
		return usageError(stderr, err)
	}
	verdict := verb
	if verb == "remove" {
		verdict = *from
	}
	switch {
	case !wire.IsName(*sup):
		return usageError(stderr, fmt.Errorf("name the rule supervisor: --supervisor s"))
	case !validVerdict(verdict):
		return usageError(stderr, fmt.Errorf("--verdict %q: say which list the rules are on, allow, ask or deny", verdict))
	case len(pos) == 0:
		return usageError(stderr, fmt.Errorf(`give one or more rules, e.g. "Bash(npm test:*)"`))
	}
	for _, rule := range pos {
		if _, err := permission.Parse(rule, permission.Paths{}); err != nil {
			return usageError(stderr, err)
		}
	}
	c, code := to.client("rules", stderr)
	if c == nil {
		return code
	}
	defer c.close()
	who, err := responder(c, *as)
	if err != nil {
		fmt.Fprintln(stderr, "agentmux rules:", err)
		return exitUsage
	}
	ctx, cancel := c.timeout(2 * clientTimeout)
	defer cancel()
	change := &wire.RuleChange{ID: nuid.Next(), Verdict: verdict, Rules: pos, Remove: verb == "remove", Note: *note}
	replies, err := store.ChangeRules(ctx, c.nc, c.js, *sup, who, change)
	if err != nil {
		fmt.Fprintln(stderr, "agentmux rules:", c.explain(err))
		return exitError
	}
	slices.SortFunc(replies, func(a, b *wire.RulesReply) int { return strings.Compare(a.Node, b.Node) })
	code = exitOK
	for _, r := range replies {
		switch {
		case r.Error != "":
			fmt.Fprintf(stderr, "agentmux rules: %s: %s\n", r.Node, r.Error)
			code = exitError
		case r.Changed:
			fmt.Fprintf(stdout, "%s: %s's rules file changed and reloaded\n", r.Node, *sup)
		default:
			fmt.Fprintf(stdout, "%s: %s's rules file had it already; reloaded\n", r.Node, *sup)
		}
	}
	return code
}

func validVerdict(s string) bool {
	_, err := permission.ParseVerdict(s)
	return err == nil
}
