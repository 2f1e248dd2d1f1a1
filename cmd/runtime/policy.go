package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/nats-io/nuid"

	"github.com/agentmux/agentmux/permission"
	"github.com/agentmux/agentmux/policy"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

const outTOML = "toml"

// policyCommand learns policy from the fleet's history: `policy suggest` (the default),
// `policy shadow`, `policy promote|demote` and `policy replay`.
func policyCommand(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) > 0 && args[0] == "replay":
		return replayPolicy(args[1:], stdout, stderr)
	case len(args) > 0 && args[0] == "shadow":
		return shadowPolicy(args[1:], stdout, stderr)
	case len(args) > 0 && (args[0] == "promote" || args[0] == "demote"):
		return promotePolicy(args[0], args[1:], stdout, stderr)
	case len(args) > 0 && args[0] == "suggest":
		args = args[1:]
	case len(args) > 0 && !strings.HasPrefix(args[0], "-"):
		return usageError(stderr, fmt.Errorf("%q: want `agentmux policy suggest`, `shadow`, `promote`, `demote` or `replay`", args[0]))
	}
	return suggestPolicy(args, stdout, stderr)
}

// policyArgs parses the flags of `agentmux policy <verb>`, which takes no other
// arguments, then check's: the output form asked for, and the time --since names
// (read once the flags are).
func policyArgs(fs *flag.FlagSet, verb string, args []string, out *outputFlags, since *string, check func() error) (string, time.Time, error) {
	pos, err := parse(fs, args)
	switch {
	case err != nil:
		return "", time.Time{}, err
	case len(pos) > 0:
		return "", time.Time{}, fmt.Errorf("%q: agentmux policy %s takes flags only", pos[0], verb)
	}
	if check != nil {
		if err := check(); err != nil {
			return "", time.Time{}, err
		}
	}
	form, err := out.form()
	if err != nil {
		return "", time.Time{}, err
	}
	from, err := store.ParseTimeBound(*since, time.Now())
	if err != nil {
		return "", time.Time{}, fmt.Errorf("--since %w", err)
	}
	return form, from, nil
}

// suggestPolicy proposes permission rules from the audit's past approvals.
func suggestPolicy(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("policy suggest", stdout, stderr)
	to := reachFlags(fs)
	since := fs.String("since", "30d", "read approvals from `when`: a duration before now (30d, 24h) or an RFC 3339 time")
	host := fs.String("host", "", "only the approvals of `host`")
	minSupport := fs.Int("min-support", 3, "propose a rule only if it allows at least `n` past requests")
	minAgreement := fs.Float64("min-agreement", 0.9, "… of which at least this `share` (0 to 1) were approved")
	write := fs.String("write", "", "add the rules to the rules `file` a rule supervisor's rules_file loads")
	promote := fs.String("promote", "", "add the rules to rule `supervisor`'s rules_file on every node that runs it, which reloads (as agentmux rules allow: audited in your name)")
	as := fs.String("as", "", "`name` recorded as who promoted them, on a bus without users (default $USER)")
	out := newOutputFlags(fs, outTOML)
	form, from, err := policyArgs(fs, "suggest", args, out, since, func() error {
		if *minAgreement < 0 || *minAgreement > 1 {
			return fmt.Errorf("--min-agreement %v: give a share from 0 to 1", *minAgreement)
		}
		return nil
	})
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
	var records []*wire.AuditRecord
	err = store.SearchAudit(ctx, c.nc, store.AuditQuery{Host: *host, Type: "approval", Since: from}, func(r *wire.AuditRecord) error {
		records = append(records, r)
		return nil
	})
	if err != nil {
		fmt.Fprintln(stderr, "agentmux policy:", c.explain(err))
		return exitError
	}
	history := policy.FromAudit(records)
	// File rules relative to each host's working directory need the manifest; without
	// it, they name absolute paths.
	opts := policy.Options{MinSupport: *minSupport, MinAgreement: *minAgreement}
	if m := c.fleet.m; m != nil {
		opts.Cwd, opts.Root = m.WorkDir, filepath.Dir(m.Path)
	}
	suggestions, refused := policy.Suggest(history, opts)
	fmt.Fprintf(stderr, "agentmux policy: %d approvals decided since %s; %d rules proposed\n", len(history), from.UTC().Format(time.RFC3339), len(suggestions))
	for _, r := range refused {
		fmt.Fprintf(stderr, "not proposed: %s: %s\n", r.Rule, r.Why)
	}
	if *write != "" {
		if code := writeSuggestions(*write, suggestions, stdout, stderr); code != exitOK {
			return code
		}
	}
	if *promote != "" {
		if code := promoteSuggestions(c, *promote, *as, suggestions, stderr); code != exitOK {
			return code
		}
	}
	switch form {
	case outJSON:
		return jsonLines(stdout, suggestions)
	case outTOML:
		_, _ = io.WriteString(stdout, suggestedFile(suggestions))
		return exitOK
	}
	rows := make([][]string, 0, len(suggestions))
	for _, s := range suggestions {
		var by []string
		for _, d := range s.Deciders {
			by = append(by, d.Decider+" ("+strconv.Itoa(d.N)+")")
		}
		example := s.Example
		if form != outWide {
			example = oneLine(example, 50)
		}
		row := []string{s.Rule, strconv.Itoa(s.Support), fmt.Sprintf("%.0f%%", 100*s.Agreement), strings.Join(by, ", "), example}
		if form == outWide {
			row = append(row, strings.Join(s.Hosts, ","))
		}
		rows = append(rows, row)
	}
	header := []string{"RULE", "SUPPORT", "AGREEMENT", "DECIDED BY", "EXAMPLE"}
	if form == outWide {
		header = append(header, "HOSTS")
	}
	return table(stdout, header, rows)
}

// suggestedEntry is a suggestion as a rules file keeps it: what it stands on in its note.
func suggestedEntry(s policy.Suggestion, at time.Time) permission.Entry {
	var by []string
	for _, d := range s.Deciders {
		by = append(by, fmt.Sprintf("%s %d", d.Decider, d.N))
	}
	return permission.Entry{Rule: s.Rule, By: "agentmux policy suggest", At: at,
		Note: fmt.Sprintf("allows %d past requests, %.0f%% approved (%s); e.g. %s", s.Support, 100*s.Agreement, strings.Join(by, ", "), oneLine(s.Example, 120))}
}

// suggestedFile is the suggestions as a rules file.
func suggestedFile(suggestions []policy.Suggestion) string {
	f := &permission.File{}
	now := time.Now().UTC().Truncate(time.Second)
	for _, s := range suggestions {
		f.Add(permission.Allow, suggestedEntry(s, now))
	}
	var b bytes.Buffer
	b.WriteString("# Permission rules agentmux policy suggest proposed from the audit; a rule supervisor's rules_file loads them.\n\n")
	_ = toml.NewEncoder(&b).Encode(f)
	return b.String()
}

// writeSuggestions adds the suggestions to the rules file at path (made if missing),
// keeping what it holds.
func writeSuggestions(path string, suggestions []policy.Suggestion, stdout, stderr io.Writer) int {
	added := 0
	now := time.Now().UTC().Truncate(time.Second)
	err := permission.UpdateFile(path, "Permission rules, some proposed by agentmux policy suggest from the audit; a rule supervisor's rules_file loads them.",
		func(f *permission.File) (bool, error) {
			for _, s := range suggestions {
				if f.Add(permission.Allow, suggestedEntry(s, now)) {
					added++
				}
			}
			return added > 0, nil
		})
	if err != nil {
		fmt.Fprintln(stderr, "agentmux policy:", err)
		return exitError
	}
	fmt.Fprintf(stderr, "agentmux policy: %d rules added to %s (%d there already); nodes read it when they reload (SIGHUP), or promote each with `agentmux rules allow`\n",
		added, path, len(suggestions)-added)
	if _, err := os.Stat(path); err != nil {
		fmt.Fprintln(stderr, "agentmux policy:", err)
		return exitError
	}
	return exitOK
}

// promoteSuggestions adds each suggestion to supervisor's rules file across the fleet,
// one audited change each (rule.added, in the caller's name, with what it stands on).
func promoteSuggestions(c *busClient, supervisor, as string, suggestions []policy.Suggestion, stderr io.Writer) int {
	who, err := responder(c, as)
	if err != nil {
		fmt.Fprintln(stderr, "agentmux policy:", err)
		return exitUsage
	}
	now := time.Now().UTC().Truncate(time.Second)
	for _, s := range suggestions {
		ctx, cancel := c.timeout(2 * clientTimeout)
		change := &wire.RuleChange{ID: nuid.Next(), Verdict: string(permission.Allow), Rules: []string{s.Rule}, Note: suggestedEntry(s, now).Note}
		replies, err := store.ChangeRules(ctx, c.nc, c.js, supervisor, who, change)
		cancel()
		if err != nil {
			fmt.Fprintln(stderr, "agentmux policy:", c.explain(err))
			return exitError
		}
		var nodes []string
		for _, r := range replies {
			if r.Error != "" {
				fmt.Fprintf(stderr, "agentmux policy: %s: %s: %s\n", s.Rule, r.Node, r.Error)
				return exitError
			}
			nodes = append(nodes, r.Node)
		}
		fmt.Fprintf(stderr, "agentmux policy: %s promoted to %s's rules file on %s, as %s\n", s.Rule, supervisor, strings.Join(nodes, ", "), who)
	}
	return exitOK
}
