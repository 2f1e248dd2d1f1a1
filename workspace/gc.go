package workspace

import (
	"cmp"
	"context"
	"time"
)

// A mirror shared by worktrees gathers what no ref reaches: each checkpoint of a session
// writes a commit and the blobs of the files it changed (Snapshot), loose, and the next
// one supersedes it. agentmux runs git with gc.auto=0 (hardening), so that nothing an
// agent's session runs collects them; a worktree's removal prunes them, at most every
// collectEvery.
const (
	collectEvery = time.Hour
	collectGrace = "1.hour.ago" // what is younger stays: a command running now may need it
)

// collection is when a root's mirror was last pruned, and the grace it gives (tests
// shorten it).
type collection struct {
	at    time.Time
	grace string // git prune's --expire
}

// collect prunes the mirror's loose objects that nothing reaches (superseded checkpoint
// commits and their files, those of removed checkouts), once collectEvery has passed
// since the last time. A worktree's HEAD, index and refs/worktree/ refs reach what its
// session still has.
func (p *Provider) collect(ctx context.Context) {
	r := p.root
	r.mu.Lock()
	grace, due := cmp.Or(r.collected.grace, collectGrace), time.Since(r.collected.at) >= collectEvery
	if due {
		r.collected.at = time.Now()
	}
	r.mu.Unlock()
	if !due {
		return
	}
	if _, err := p.git.run(ctx, localTimeout, "", "--git-dir="+r.mirror(), "prune", "--expire="+grace); err != nil {
		r.log.Warn("the workspaces' mirror was not pruned; it is tried again within the hour", "err", err)
	}
}
