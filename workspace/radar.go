package workspace

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentmux/agentmux/permission"
	"github.com/agentmux/agentmux/wire"
)

// Bounds of a radar.
const (
	staleAfter = 24 * time.Hour // a session heard nothing of for this long is forgotten
	pruneEvery = time.Minute
)

// Radar knows which files the live sessions of each repository are about to change and
// have changed, from every node's workspace.touched events, and finds the sessions that
// touch the same files. It is safe for concurrent use; every method is a map look-up.
type Radar struct {
	mu      sync.Mutex
	repos   map[string]map[string]map[string]*wire.WorkspaceConflict // repo → path → session → its last touch
	seen    map[[4]string]bool                                       // conflicts found: repo, session, other, path
	last    map[string]time.Time                                     // when each session was last heard of
	pruned  time.Time
	session map[string]string // each session's repo
}

// NewRadar returns an empty radar.
func NewRadar() *Radar {
	return &Radar{repos: map[string]map[string]map[string]*wire.WorkspaceConflict{}, seen: map[[4]string]bool{},
		last: map[string]time.Time{}, session: map[string]string{}}
}

// Note records t and returns what it conflicts with: for each other live session that
// touched one of t's paths, those paths, each pair of sessions and path once.
func (r *Radar) Note(t *wire.WorkspaceTouch) []wire.WorkspaceConflict {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	r.prune(now)
	r.last[t.Session], r.session[t.Session] = now, t.Repo
	paths := r.repos[t.Repo]
	if paths == nil {
		paths = map[string]map[string]*wire.WorkspaceConflict{}
		r.repos[t.Repo] = paths
	}
	found := map[string]*wire.WorkspaceConflict{} // by other session
	for _, p := range t.Paths {
		touches := paths[p]
		if touches == nil {
			touches = map[string]*wire.WorkspaceConflict{}
			paths[p] = touches
		}
		touches[t.Session] = &wire.WorkspaceConflict{Paths: []string{p}, Session: t.Session, Host: t.Host, Node: t.Node,
			Branch: t.Branch, Kind: t.Kind, Time: t.Time}
		for other, o := range touches {
			key := [4]string{t.Repo, t.Session, other, p}
			if other == t.Session || r.seen[key] {
				continue
			}
			r.seen[key] = true
			r.seen[[4]string{t.Repo, other, t.Session, p}] = true // the other's later touch of it is no news
			if c := found[other]; c != nil {
				c.Paths = append(c.Paths, p)
				c.Time = max(c.Time, o.Time)
				continue
			}
			c := *o
			c.Paths = []string{p}
			found[other] = &c
		}
	}
	return sorted(found)
}

// With is what the live sessions of repo other than session touched of paths: what the
// supervisors of session's request to change them are told.
func (r *Radar) With(repo, session string, paths []string) []wire.WorkspaceConflict {
	r.mu.Lock()
	defer r.mu.Unlock()
	found := map[string]*wire.WorkspaceConflict{}
	for _, p := range paths {
		for other, o := range r.repos[repo][p] {
			if other == session {
				continue
			}
			if c := found[other]; c != nil {
				c.Paths = append(c.Paths, p)
				c.Time = max(c.Time, o.Time)
				continue
			}
			c := *o
			c.Paths = []string{p}
			found[other] = &c
		}
	}
	return sorted(found)
}

// Ended forgets session: it is no longer live.
func (r *Radar) Ended(session string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.forget(session)
}

func (r *Radar) forget(session string) {
	repo, ok := r.session[session]
	if !ok {
		return
	}
	for p, touches := range r.repos[repo] {
		delete(touches, session)
		if len(touches) == 0 {
			delete(r.repos[repo], p)
		}
	}
	for key := range r.seen {
		if key[1] == session || key[2] == session {
			delete(r.seen, key)
		}
	}
	delete(r.session, session)
	delete(r.last, session)
}

// prune forgets the sessions heard nothing of for staleAfter (their end was missed);
// r.mu is held.
func (r *Radar) prune(now time.Time) {
	if now.Sub(r.pruned) < pruneEvery {
		return
	}
	r.pruned = now
	for s, at := range r.last {
		if now.Sub(at) > staleAfter {
			r.forget(s)
		}
	}
}

func sorted(found map[string]*wire.WorkspaceConflict) []wire.WorkspaceConflict {
	out := make([]wire.WorkspaceConflict, 0, len(found))
	for _, c := range found {
		slices.Sort(c.Paths)
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b wire.WorkspaceConflict) int { return strings.Compare(a.Session, b.Session) })
	return out
}

// editing are the tools whose approval changes the file it names.
var editing = map[string]bool{"Edit": true, "Write": true, "MultiEdit": true, "NotebookEdit": true}

// RequestPaths are the files a canonical approval asks to change, by their path in ws's
// repository: an edit tool's file (Claude Code's, an ACP agent's edit), and the paths
// a dialect lists (Codex's file changes, an ACP tool call's locations). Paths outside
// the workspace are left out.
func (ws *Workspace) RequestPaths(request json.RawMessage) []string {
	var listed struct {
		Paths []string `json:"paths"`
	}
	_ = json.Unmarshal(request, &listed)
	raw := listed.Paths
	if c, ok := permission.FromApproval(request); ok && editing[c.Tool] && c.Path != "" {
		raw = append(raw, c.Path)
	}
	var out []string
	for _, p := range raw {
		if rel, ok := ws.rel(p); ok && !slices.Contains(out, rel) {
			out = append(out, rel)
		}
	}
	return out
}

// rel is p's path in the repository: p is absolute, or relative to where the agent
// started; ok is false for a path outside the checkout.
func (ws *Workspace) rel(p string) (string, bool) {
	if !filepath.IsAbs(p) {
		p = filepath.Join(ws.Cwd, p)
	}
	rel, err := filepath.Rel(ws.Path, filepath.Clean(p))
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") || strings.HasPrefix(rel, ".git/") || rel == ".git" {
		return "", false
	}
	return filepath.ToSlash(rel), true
}
