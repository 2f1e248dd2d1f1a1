package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/decide"
	"github.com/agentmux/agentmux/policy"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// exitDangerous is replay's exit when the new policy would allow what a person denied.
const exitDangerous = 1

// replayPolicy decides the audit's past requests again with a new manifest, offline,
// and prints what would change.
func replayPolicy(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("policy replay", stdout, stderr)
	path := fs.String("c", "agentmux.toml", "the new manifest `file`: its routes and supervisors decide; its [nats] is where the audit is read, unless --audit")
	since := fs.String("since", "7d", "replay requests from `when`: a duration before now (7d, 24h) or an RFC 3339 time")
	session := fs.String("session", "", "replay only `session`'s requests")
	auditFile := fs.String("audit", "", "read the audit from `file` (agentmux audit -o json), not the fleet: for a CI job with no bus")
	cacheDir := fs.String("cache", defaultReplayCache(), "keep the llm supervisors' model answers in `dir`: a second replay calls no model")
	examples := fs.Int("examples", 3, "show up to `n` requests of each change")
	out := newOutputFlags(fs)
	form, from, err := policyArgs(fs, "replay", args, out, since, nil)
	if err != nil {
		return usageError(stderr, err)
	}
	m, code := loadManifest(*path, stderr)
	if m == nil {
		return code
	}
	q := store.AuditQuery{Since: from}
	records, code := replayRecords(m, q, *auditFile, *session, stderr)
	if code != exitOK {
		return code
	}
	cache := &policy.Cache{Dir: *cacheDir}
	r, err := policy.NewReplayer(m, decide.Deps{HTTPClient: &http.Client{Transport: cache}})
	if err != nil {
		fmt.Fprintln(stderr, "agentmux policy replay:", err)
		return exitError
	}
	past := policy.PastFromAudit(records)
	var replayed []policy.Replayed
	counts, dangerous := map[string]int{}, 0
	for _, p := range past {
		if *session != "" && p.Session != *session {
			continue
		}
		x := r.Replay(context.Background(), p)
		replayed = append(replayed, x)
		if x.Error != "" {
			counts["not decided"]++
		} else {
			counts[x.Change]++
		}
		if x.Dangerous {
			dangerous++
		}
	}
	if form == outJSON {
		if code := jsonLines(stdout, replayed); code != exitOK {
			return code
		}
	} else {
		printReplay(stdout, m, replayed, counts, *examples)
	}
	fmt.Fprintf(stderr, "agentmux policy replay: %d requests since %s decided again with %s (model answers: %d from the cache, %d asked)\n",
		len(replayed), from.UTC().Format(time.RFC3339), *path, cache.Hits, cache.Misses)
	if dangerous > 0 {
		fmt.Fprintf(stderr, "agentmux policy replay: the new policy would allow %d requests a person denied\n", dangerous)
		return exitDangerous
	}
	return exitOK
}

// replayRecords reads the audit records to replay: from file (JSON lines), or the
// fleet's audit the manifest's [nats] reaches; only session's when one is given.
func replayRecords(m *config.Manifest, q store.AuditQuery, file, session string, stderr io.Writer) ([]*wire.AuditRecord, int) {
	var records []*wire.AuditRecord
	keep := func(r *wire.AuditRecord) {
		if q.Keeps(r) && (session == "" || r.Session == session) {
			records = append(records, r)
		}
	}
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			fmt.Fprintln(stderr, "agentmux policy replay:", err)
			return nil, exitError
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
		for n := 1; sc.Scan(); n++ {
			var r wire.AuditRecord
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				fmt.Fprintf(stderr, "agentmux policy replay: %s line %d is not an audit record (agentmux audit -o json writes them): %v\n", file, n, err)
				return nil, exitError
			}
			keep(&r)
		}
		if err := sc.Err(); err != nil {
			fmt.Fprintln(stderr, "agentmux policy replay:", err)
			return nil, exitError
		}
		return records, exitOK
	}
	c, err := dial("policy", m)
	if err != nil {
		fmt.Fprintln(stderr, "agentmux policy replay:", err)
		return nil, exitError
	}
	defer c.close()
	ctx, cancel := c.timeout(searchTimeout)
	defer cancel()
	if err := store.SearchAudit(ctx, c.nc, q, func(r *wire.AuditRecord) error { keep(r); return nil }); err != nil {
		fmt.Fprintln(stderr, "agentmux policy replay:", c.explain(err))
		return nil, exitError
	}
	return records, exitOK
}

// printReplay writes how many requests each change holds, and examples of each.
func printReplay(w io.Writer, m *config.Manifest, replayed []policy.Replayed, counts map[string]int, examples int) {
	fmt.Fprintf(w, "%d requests replayed with %s\n", len(replayed), filepath.Base(m.Path))
	for _, change := range []string{policy.Same, policy.AllowsDenied, policy.DeniesAllow, policy.AsksInstead, policy.DecidesAsked, policy.AnswersOther, "not decided"} {
		if counts[change] == 0 {
			continue
		}
		fmt.Fprintf(w, "%6d  %s\n", counts[change], change)
		if change == policy.Same {
			continue
		}
		shown := 0
		for _, x := range replayed {
			if x.Change != change && !(change == "not decided" && x.Error != "") {
				continue
			}
			if shown == examples {
				break
			}
			shown++
			now := string(x.NewValue) + " by " + x.NewDecider
			switch {
			case x.Error != "":
				now = "error: " + x.Error
			case x.WouldAsk != "":
				now = "would wait for " + x.WouldAsk
			case x.NewValue == nil:
				now = "the default (" + x.NewDecider + ")"
			}
			danger := ""
			if x.Dangerous {
				danger = "  DANGEROUS"
			}
			was := string(x.Value)
			if len(x.Value) == 0 {
				was = "no answer"
			}
			fmt.Fprintf(w, "        %s %s %s: was %s by %s, now %s%s\n", x.At.UTC().Format("2006-01-02 15:04"), x.Session, oneLine(x.Text, 60), was, x.Decider, now, danger)
		}
		if left := counts[change] - shown; left > 0 {
			fmt.Fprintf(w, "        … and %d more (--examples %d shows more; -o json lists every one)\n", left, counts[change])
		}
	}
}

// defaultReplayCache is where replays keep model answers: the user's cache folder.
func defaultReplayCache() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "agentmux-replay")
	}
	return filepath.Join(dir, "agentmux", "replay")
}
