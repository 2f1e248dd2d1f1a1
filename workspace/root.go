package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/wire"
)

// Record is the node's record of one workspace, kept while its checkout is.
type Record = wire.WorkspaceRecord

// States of a workspace's record.
const (
	StateOpen = wire.WorkspaceOpen // its session runs (or its node died while it ran)
	StateKept = wire.WorkspaceKept // its session ended; the checkout is kept (keep)
)

// Root is a node's workspaces of one host, on disk: the mirror, the checkouts, and the
// node's record of each. One Root serves a directory: its lock orders the commands that
// write the mirror.
type Root struct {
	dir string
	log *slog.Logger
	mu  sync.Mutex // held by the commands that write the mirror's refs and worktrees
	// collected is when the mirror's unreachable objects were last collected (gc.go);
	// under mu.
	collected collection
}

// OpenRoot opens (making it if need be) the root at dir.
func OpenRoot(dir string, log *slog.Logger) (*Root, error) {
	r := &Root{dir: dir, log: log}
	for _, d := range []string{r.records(), r.Work()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("workspace: make %s: %w; check workspace_dir", d, err)
		}
	}
	return r, nil
}

// Work is the directory the host's agents may write: the mirror and the checkouts.
func (r *Root) Work() string { return filepath.Join(r.dir, "work") }

func (r *Root) records() string { return filepath.Join(r.dir, "records") }
func (r *Root) mirror() string  { return filepath.Join(r.Work(), "mirror.git") }

// name is attempt's checkout's (and record's) name.
func name(session string, attempt int) string { return fmt.Sprintf("%s.%d", session, attempt) }

func (r *Root) recordPath(session string, attempt int) string {
	return filepath.Join(r.records(), name(session, attempt)+".json")
}

// write records rec, replacing the file whole.
func (r *Root) write(rec *Record) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	path := r.recordPath(rec.Session, rec.Attempt)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("workspace: record %s: %w", path, err)
	}
	return os.Rename(tmp, path)
}

func (r *Root) forget(session string, attempt int) {
	if err := os.Remove(r.recordPath(session, attempt)); err != nil && !errors.Is(err, os.ErrNotExist) {
		r.log.Warn("a removed workspace's record stays; remove it by hand", "err", err)
	}
}

// Records are the workspaces this root holds, oldest first.
func (r *Root) Records() ([]*Record, error) {
	entries, err := os.ReadDir(r.records())
	if err != nil {
		return nil, fmt.Errorf("workspace: read %s: %w", r.records(), err)
	}
	var out []*Record
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(r.records(), e.Name()))
		if err != nil {
			return nil, fmt.Errorf("workspace: read a record: %w", err)
		}
		var rec Record
		if err := json.Unmarshal(b, &rec); err != nil {
			r.log.Warn("a workspace record is not JSON; skipped", "file", e.Name(), "err", err)
			continue
		}
		out = append(out, &rec)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Opened.Before(out[j].Opened) })
	return out, nil
}

// Reclaim removes what a node that died left in p's root: every checkout whose record
// says its session was running (none runs before the node starts its sessions) and
// every checkout without a record, then prunes the mirror's worktrees. It returns the
// checkouts it removed.
func (p *Provider) Reclaim(ctx context.Context) ([]string, error) {
	r := p.root
	recs, err := r.Records()
	if err != nil {
		return nil, err
	}
	kept := map[string]bool{"mirror.git": true}
	var removed []string
	for _, rec := range recs {
		if rec.State == StateKept {
			kept[filepath.Base(rec.Path)] = true
			continue
		}
		r.forget(rec.Session, rec.Attempt)
	}
	entries, err := os.ReadDir(r.Work())
	if err != nil {
		return nil, fmt.Errorf("workspace: read %s: %w", r.Work(), err)
	}
	for _, e := range entries {
		if kept[e.Name()] {
			continue
		}
		path := filepath.Join(r.Work(), e.Name())
		if err := os.RemoveAll(path); err != nil {
			return removed, fmt.Errorf("workspace: remove the orphaned %s: %w", path, err)
		}
		removed = append(removed, path)
	}
	if _, err := os.Stat(r.mirror()); err == nil {
		r.mu.Lock()
		_, err = p.git.run(ctx, localTimeout, "", "--git-dir="+r.mirror(), "worktree", "prune")
		r.mu.Unlock()
		if err != nil {
			return removed, fmt.Errorf("workspace: prune the mirror's worktrees: %w", err)
		}
	}
	return removed, nil
}

// Provider makes and ends workspaces of root for a host table: spec is its workspace
// keys, env its agents' environment, start how its agents start (its sandbox's Start;
// nil: unconfined).
func (r *Root) Provider(host string, spec config.Workspace, env []string, start func(*exec.Cmd) error) *Provider {
	g := git{env: env, start: start}
	return &Provider{root: r, host: host, spec: spec, git: g, pushGit: g}
}

// PushWith starts the push's git with start: a sandbox that may write the push
// target, which the agents' may not (the repository itself, push = "origin").
func (p *Provider) PushWith(start func(*exec.Cmd) error) {
	p.pushGit.start = start
}
