package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// workspaceWait bounds a request to a node that runs git: a diff, a clean.
const workspaceWait = 2 * time.Minute

// workspaceCommand lists, shows, diffs and cleans the workspaces of the fleet's sessions
// (hosts with workspace = "worktree" or "clone"); with flags alone, it lists.
func workspaceCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return workspaceList(args, stdout, stderr)
	}
	switch args[0] {
	case "list":
		return workspaceList(args[1:], stdout, stderr)
	case "show":
		return workspaceShow(args[1:], stdout, stderr)
	case "diff":
		return workspaceDiff(args[1:], stdout, stderr)
	case "clean":
		return workspaceClean(args[1:], stdout, stderr)
	}
	return usageError(stderr, fmt.Errorf("%q: want `agentmux workspace list`, `show <session>`, `diff <session>` or `clean`", args[0]))
}

// fleetWorkspaces asks every live node (or the one named) for the workspaces it holds,
// all at once. Nodes that did not answer are returned by name, with why.
func fleetWorkspaces(ctx context.Context, c *busClient, only string) ([]wire.WorkspaceRecord, map[string]error, error) {
	out, silent, err := askLiveNodes(ctx, c, only, func(node string) ([]wire.WorkspaceRecord, error) {
		reply, err := workspaceRequest(ctx, c, node, "workspaces", nil)
		if err != nil {
			return nil, err
		}
		return reply.Records, nil
	})
	slices.SortFunc(out, func(a, b wire.WorkspaceRecord) int {
		return cmp.Or(a.Opened.Compare(b.Opened), strings.Compare(a.Session, b.Session))
	})
	return out, silent, err
}

// workspaceRequest sends node the workspace request verb with req (nil: none), and
// returns its reply; a reply that says why not is the error.
func workspaceRequest(ctx context.Context, c *busClient, node, verb string, req any) (*wire.WorkspaceReply, error) {
	var data []byte
	if req != nil {
		data, _ = json.Marshal(req)
	}
	msg, err := c.nc.RequestWithContext(ctx, wire.CtlSubject(node, verb), data)
	if err != nil {
		return nil, fmt.Errorf("node %s did not answer: %w; `agentmux nodes` lists the live ones", node, c.explain(err))
	}
	var reply wire.WorkspaceReply
	if err := json.Unmarshal(msg.Data, &reply); err != nil {
		return nil, fmt.Errorf("node %s answered %q, which is not a workspace reply", node, msg.Data)
	}
	if reply.Error != "" && len(reply.Records) == 0 {
		return &reply, fmt.Errorf("node %s: %s", node, reply.Error)
	}
	return &reply, nil
}

// reportSilent says which nodes did not answer; it returns exitError when any did not.
func reportSilent(cmd string, silent map[string]error, stderr io.Writer) int {
	names := make([]string, 0, len(silent))
	for name := range silent {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		fmt.Fprintf(stderr, "agentmux %s: node %s: %v\n", cmd, name, silent[name])
	}
	if len(names) > 0 {
		return exitError
	}
	return exitOK
}

// workspaceList prints the workspaces the fleet's live nodes hold: running sessions',
// and those kept after their session.
func workspaceList(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("workspace list", stdout, stderr)
	to := reachFlags(fs)
	host := fs.String("host", "", "only this `host`'s workspaces")
	node := fs.String("node", "", "only the workspaces of this `node`")
	out := newOutputFlags(fs)
	if _, err := parse(fs, args); err != nil {
		return usageError(stderr, err)
	}
	form, err := out.form()
	if err != nil {
		return usageError(stderr, err)
	}
	c, code := to.client("workspace list", stderr)
	if c == nil {
		return code
	}
	defer c.close()
	ctx, cancel := c.timeout(clientTimeout)
	defer cancel()
	all, silent, err := fleetWorkspaces(ctx, c, *node)
	if err != nil {
		fmt.Fprintln(stderr, "agentmux workspace list:", c.explain(err))
		return exitError
	}
	recs := slices.DeleteFunc(all, func(r wire.WorkspaceRecord) bool { return *host != "" && r.Host != *host })
	switch {
	case form == outJSON:
		jsonLines(stdout, recs)
	case len(recs) == 0:
		fmt.Fprintln(stdout, "no workspaces: no session runs in one, and none is kept")
	default:
		header := []string{"SESSION", "ATTEMPT", "HOST", "NODE", "STATE", "BRANCH", "SIZE"}
		if form == outWide {
			header = append(header, "FILES", "+/-", "PATH")
		}
		rows := make([][]string, 0, len(recs))
		for _, r := range recs {
			row := []string{r.Session, strconv.Itoa(r.Attempt), r.Host, r.Node, r.State, r.Branch, byteSize(r.Bytes)}
			if form == outWide {
				files, lines := "-", "-"
				if res := r.Result; res != nil {
					files, lines = strconv.Itoa(res.Files), fmt.Sprintf("+%d/-%d", res.Insertions, res.Deletions)
				}
				row = append(row, files, lines, r.Path)
			}
			rows = append(rows, row)
		}
		table(stdout, header, rows)
	}
	return reportSilent("workspace list", silent, stderr)
}

// byteSize is n bytes for a person: 0, 512 B, 4.0 KiB, 12.3 MiB.
func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

// sessionWorkspaces is what the fleet knows of session's workspaces: the records of the
// live nodes that hold one, and its ends' records in the audit.
type sessionWorkspaces struct {
	Live  []wire.WorkspaceRecord `json:"live"`
	Ended []*wire.AuditRecord    `json:"ended"`
}

func findWorkspaces(ctx context.Context, c *busClient, session string) (*sessionWorkspaces, map[string]error, error) {
	all, silent, err := fleetWorkspaces(ctx, c, "")
	if err != nil {
		return nil, nil, err
	}
	out := &sessionWorkspaces{Live: slices.DeleteFunc(all, func(r wire.WorkspaceRecord) bool { return r.Session != session })}
	records, err := store.ReadAudit(ctx, c.js, session)
	if err != nil {
		return nil, nil, err
	}
	for _, r := range records {
		if r.Kind == wire.EventSessionEnded && r.Workspace != nil {
			out.Ended = append(out.Ended, r)
		}
	}
	return out, silent, nil
}

// workspaceShow prints what a session did in its workspaces, attempt by attempt.
func workspaceShow(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("workspace show", stdout, stderr)
	to := reachFlags(fs)
	out := newOutputFlags(fs)
	pos, err := parse(fs, args)
	if err == nil && len(pos) != 1 {
		err = errors.New("want a session id: workspace show -c <manifest> <session>")
	}
	if err != nil {
		return usageError(stderr, err)
	}
	form, err := out.form()
	if err != nil {
		return usageError(stderr, err)
	}
	c, code := to.client("workspace show", stderr)
	if c == nil {
		return code
	}
	defer c.close()
	ctx, cancel := c.timeout(clientTimeout)
	defer cancel()
	found, silent, err := findWorkspaces(ctx, c, pos[0])
	if err != nil {
		fmt.Fprintln(stderr, "agentmux workspace show:", c.explain(err))
		return exitError
	}
	if form == outJSON {
		b, _ := json.MarshalIndent(found, "", "  ")
		fmt.Fprintln(stdout, string(b))
		return reportSilent("workspace show", silent, stderr)
	}
	if len(found.Live) == 0 && len(found.Ended) == 0 {
		fmt.Fprintf(stderr, "agentmux workspace show: session %s has no workspace a live node holds, and none in the audit; `agentmux workspace list` lists them\n", pos[0])
		return exitError
	}
	for _, r := range found.Ended {
		w := r.Workspace
		fmt.Fprintf(stdout, "attempt %d on %s (host %s): ended %s\n", r.Attempt, r.Node, r.Host, r.Outcome)
		fmt.Fprintf(stdout, "  branch %s  base %s  head %s\n", w.Branch, short(w.Base), short(w.Head))
		if w.Mirror != "" {
			fmt.Fprintf(stdout, "  in %s on %s\n", w.Mirror, r.Node)
		}
		fmt.Fprintf(stdout, "  %d files changed, +%d -%d", w.Files, w.Insertions, w.Deletions)
		if w.Dirty {
			fmt.Fprint(stdout, map[bool]string{true: "; what it left uncommitted was committed", false: "; it left changes uncommitted"}[w.Committed])
		}
		fmt.Fprintln(stdout)
		if w.Pushed != "" {
			fmt.Fprintf(stdout, "  pushed to %s\n", w.Pushed)
		}
		if w.Path != "" {
			fmt.Fprintf(stdout, "  kept at %s (%s)\n", w.Path, byteSize(w.Bytes))
		}
		if w.Error != "" {
			fmt.Fprintf(stdout, "  not all done: %s\n", w.Error)
		}
	}
	for _, r := range found.Live {
		if r.State == wire.WorkspaceOpen {
			fmt.Fprintf(stdout, "attempt %d on %s (host %s): running in %s on %s, from %s (%s)\n", r.Attempt, r.Node, r.Host, r.Path, r.Branch, short(r.Base), byteSize(r.Bytes))
		}
	}
	return reportSilent("workspace show", silent, stderr)
}

func short(commit string) string { return commit[:min(len(commit), 12)] }

// workspaceDiff prints what a session changed: an ended attempt's branch from its base
// to its head, or a running attempt's checkout as it is now.
func workspaceDiff(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("workspace diff", stdout, stderr)
	to := reachFlags(fs)
	attempt := fs.Int("attempt", -1, "this `attempt`'s workspace (default the last)")
	stat := fs.Bool("stat", false, "files changed, not the patch")
	pos, err := parse(fs, args)
	if err == nil && len(pos) != 1 {
		err = errors.New("want a session id: workspace diff -c <manifest> <session> [--attempt n] [--stat]")
	}
	if err != nil {
		return usageError(stderr, err)
	}
	c, code := to.client("workspace diff", stderr)
	if c == nil {
		return code
	}
	defer c.close()
	ctx, cancel := c.timeout(workspaceWait)
	defer cancel()
	found, _, err := findWorkspaces(ctx, c, pos[0])
	if err != nil {
		fmt.Fprintln(stderr, "agentmux workspace diff:", c.explain(err))
		return exitError
	}
	node, req := "", wire.WorkspaceDiff{Session: pos[0], Stat: *stat}
	for _, r := range found.Ended {
		if *attempt < 0 || r.Attempt == *attempt {
			node, req.Host, req.Attempt, req.Base, req.Head = r.Node, r.Host, r.Attempt, r.Workspace.Base, r.Workspace.Head
		}
	}
	for _, r := range found.Live {
		if r.State == wire.WorkspaceOpen && (*attempt < 0 || r.Attempt == *attempt) && (node == "" || r.Attempt > req.Attempt) {
			node, req.Host, req.Attempt, req.Base, req.Head = r.Node, r.Host, r.Attempt, "", ""
		}
	}
	if node == "" {
		fmt.Fprintf(stderr, "agentmux workspace diff: session %s has no such workspace; `agentmux workspace show %s` says what it has\n", pos[0], pos[0])
		return exitError
	}
	reply, err := workspaceRequest(ctx, c, node, "workspace-diff", req)
	if err != nil {
		fmt.Fprintln(stderr, "agentmux workspace diff:", err)
		return exitError
	}
	fmt.Fprint(stdout, reply.Diff)
	if reply.Truncated {
		fmt.Fprintf(stderr, "agentmux workspace diff: cut at %d bytes; `git diff %s %s` in the node's mirror has the rest\n", len(reply.Diff), req.Base, req.Head)
	}
	return exitOK
}

// workspaceClean removes the workspaces kept after their sessions (their branches stay).
func workspaceClean(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("workspace clean", stdout, stderr)
	to := reachFlags(fs)
	host := fs.String("host", "", "only this `host`'s")
	node := fs.String("node", "", "only this `node`'s")
	session := fs.String("session", "", "only this `session`'s")
	if _, err := parse(fs, args); err != nil {
		return usageError(stderr, err)
	}
	c, code := to.client("workspace clean", stderr)
	if c == nil {
		return code
	}
	defer c.close()
	ctx, cancel := c.timeout(workspaceWait)
	defer cancel()
	all, silent, err := fleetWorkspaces(ctx, c, *node)
	if err != nil {
		fmt.Fprintln(stderr, "agentmux workspace clean:", c.explain(err))
		return exitError
	}
	nodes := map[string]bool{}
	for _, r := range all {
		if r.State == wire.WorkspaceKept && (*host == "" || r.Host == *host) && (*session == "" || r.Session == *session) {
			nodes[r.Node] = true
		}
	}
	removed := 0
	for n := range nodes {
		reply, err := workspaceRequest(ctx, c, n, "workspace-clean", wire.WorkspaceClean{Host: *host, Session: *session})
		if reply != nil {
			for _, r := range reply.Records {
				fmt.Fprintf(stdout, "removed %s (%s on %s, %s); its branch %s stays\n", r.Path, r.Session, r.Node, byteSize(r.Bytes), r.Branch)
				removed++
			}
		}
		if err == nil && reply.Error != "" {
			err = errors.New(reply.Error)
		}
		if err != nil {
			silent[n] = err
		}
	}
	if removed == 0 && len(silent) == 0 {
		fmt.Fprintln(stdout, "no kept workspace to remove")
	}
	return reportSilent("workspace clean", silent, stderr)
}
