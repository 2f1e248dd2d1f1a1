package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/wire"
)

// Close ends ws, whose session ended (ok: it ended well): what the session left
// uncommitted is committed on its branch (commit = true), the branch is set to where the
// checkout's HEAD is, compared with base, pushed (push, when ok), and the checkout
// removed or kept (keep). Its result says what of that failed; the rest is done anyway.
// A checkout whose work could not be put on its branch is kept, whatever keep says.
func (p *Provider) Close(ctx context.Context, ws *Workspace, ok bool) *wire.Workspace {
	res := &wire.Workspace{Mode: ws.Mode, Branch: ws.Branch, Base: ws.Base, Bytes: Size(ws.Path), Mirror: p.root.mirror()}
	var errs []string
	fail := func(err error) { errs = append(errs, err.Error()) }
	settled := p.settle(ctx, ws, res)
	if settled != nil {
		fail(settled)
	}
	if res.Head != "" {
		if err := p.diffStat(ctx, res); err != nil {
			fail(err)
		}
		if ok && p.spec.Push != "" {
			if err := p.push(ctx, ws); err != nil {
				fail(err)
			} else {
				res.Pushed = p.spec.Push
			}
		}
	}
	keep := p.spec.Keep == config.KeepAlways || (p.spec.Keep == config.KeepOnFailure && !ok) || settled != nil
	if keep {
		res.Path = ws.Path
	}
	res.Error = strings.Join(errs, "; ")
	if keep {
		if err := p.root.write(ws.record(p.host, StateKept, res)); err != nil {
			fail(err)
			res.Error = strings.Join(errs, "; ")
		}
		return res
	}
	p.remove(ctx, ws)
	p.root.forget(ws.Session, ws.Attempt)
	return res
}

// Discard removes ws, whose session never ran (its agent was stopped first): no
// branch work to keep.
func (p *Provider) Discard(ctx context.Context, ws *Workspace) {
	p.remove(ctx, ws)
	p.root.forget(ws.Session, ws.Attempt)
}

// settle commits what the session left (when configured), sets its branch to the
// checkout's HEAD, whichever branch the agent moved to, and lets go of the branch, so
// that a later attempt may check it out again. In a clone, the branch is fetched into
// the mirror, where it outlives the clone.
func (p *Provider) settle(ctx context.Context, ws *Workspace, res *wire.Workspace) error {
	if _, err := os.Stat(ws.Path); err != nil {
		return fmt.Errorf("workspace: %s is gone: %w", ws.Path, err)
	}
	status, err := p.git.run(ctx, localTimeout, ws.Path, "status", "--porcelain", "--untracked-files=all", "--ignore-submodules=none")
	if err != nil {
		return fmt.Errorf("workspace: read what the session left: %w", err)
	}
	res.Dirty = strings.TrimSpace(status) != ""
	if res.Dirty && p.spec.Commits() {
		if _, err := p.git.run(ctx, localTimeout, ws.Path, "add", "--all"); err != nil {
			return fmt.Errorf("workspace: stage what the session left: %w", err)
		}
		msg := fmt.Sprintf("agentmux: what session %s (attempt %d) left uncommitted\n\nAgentmux-Session: %s\n", ws.Session, ws.Attempt, ws.Session)
		if _, err := p.git.run(ctx, localTimeout, ws.Path, "-c", "user.name=agentmux", "-c", "user.email=agentmux@localhost",
			"commit", "--quiet", "--no-verify", "--allow-empty", "-m", msg); err != nil {
			return fmt.Errorf("workspace: commit what the session left: %w", err)
		}
		res.Committed = true
	}
	head, err := p.git.run(ctx, localTimeout, ws.Path, "rev-parse", "--verify", "HEAD^{commit}")
	if err != nil {
		return fmt.Errorf("workspace: read the checkout's HEAD: %w", err)
	}
	res.Head = strings.TrimSpace(head)
	if _, err := p.git.run(ctx, localTimeout, ws.Path, "checkout", "--quiet", "--detach"); err != nil {
		return fmt.Errorf("workspace: let go of %s: %w", ws.Branch, err)
	}
	if _, err := p.git.run(ctx, localTimeout, ws.Path, "update-ref", "refs/heads/"+ws.Branch, res.Head); err != nil {
		return fmt.Errorf("workspace: set %s to the session's last commit: %w", ws.Branch, err)
	}
	if ws.Mode == config.WorkspaceClone {
		p.root.mu.Lock()
		_, err := p.git.run(ctx, localTimeout, "", "--git-dir="+p.root.mirror(), "fetch", "--quiet", "--no-tags", "--force", "--", ws.Path,
			"+refs/heads/"+ws.Branch+":refs/heads/"+ws.Branch)
		p.root.mu.Unlock()
		if err != nil {
			return fmt.Errorf("workspace: keep %s in the mirror: %w", ws.Branch, err)
		}
	}
	return nil
}

// Changed are the files of ws that differ from its base now, committed or not, by
// their path in the repository.
func (p *Provider) Changed(ctx context.Context, ws *Workspace) ([]string, error) {
	committed, err := p.git.run(ctx, localTimeout, ws.Path, "diff", "--name-only", "--no-renames", "-z", ws.Base, "--")
	if err != nil {
		return nil, fmt.Errorf("workspace: what the session changed: %w", err)
	}
	untracked, err := p.git.run(ctx, localTimeout, ws.Path, "ls-files", "--others", "--exclude-standard", "-z")
	if err != nil {
		return nil, fmt.Errorf("workspace: what the session made: %w", err)
	}
	var out []string
	for _, list := range []string{committed, untracked} {
		for _, p := range strings.Split(list, "\x00") {
			if p != "" && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// diffStat counts the files, insertions and deletions from base to head.
func (p *Provider) diffStat(ctx context.Context, res *wire.Workspace) error {
	out, err := p.git.run(ctx, localTimeout, "", "--git-dir="+p.root.mirror(), "diff", "--numstat", "--no-renames", res.Base, res.Head, "--")
	if err != nil {
		return fmt.Errorf("workspace: compare %s with base: %w", res.Branch, err)
	}
	for line := range strings.Lines(out) {
		fields := strings.SplitN(strings.TrimRight(line, "\n"), "\t", 3)
		if len(fields) < 3 {
			continue
		}
		res.Files++
		ins, _ := strconv.Atoi(fields[0]) // "-" for a binary file: no lines
		del, _ := strconv.Atoi(fields[1])
		res.Insertions += ins
		res.Deletions += del
	}
	return nil
}

// push pushes ws's branch to the push target: "origin" is the repository itself.
func (p *Provider) push(ctx context.Context, ws *Workspace) error {
	to := p.spec.Push
	if to == "origin" {
		to = p.spec.Repo
	}
	ref := "refs/heads/" + ws.Branch
	if _, err := p.pushGit.run(ctx, fetchTimeout, "", "--git-dir="+p.root.mirror(), "push", "--quiet", "--", to, ref+":"+ref); err != nil {
		return fmt.Errorf("workspace: push %s to %s: %w", ws.Branch, p.spec.Push, err)
	}
	return nil
}

// remove removes ws's checkout, and the mirror's note of it for a worktree.
func (p *Provider) remove(ctx context.Context, ws *Workspace) {
	if err := os.RemoveAll(ws.Path); err != nil {
		p.root.log.Warn("a workspace could not be removed; the node removes it when it starts again", "path", ws.Path, "err", err)
		return
	}
	if ws.Mode != config.WorkspaceWorktree {
		return
	}
	if p.pruneWorktrees(ctx) {
		p.collect(ctx)
	}
}

// pruneWorktrees drops the mirror's notes of removed worktrees; false when there is no
// mirror.
func (p *Provider) pruneWorktrees(ctx context.Context) bool {
	p.root.mu.Lock()
	defer p.root.mu.Unlock()
	if _, err := os.Stat(p.root.mirror()); err != nil {
		return false
	}
	if _, err := p.git.run(ctx, localTimeout, "", "--git-dir="+p.root.mirror(), "worktree", "prune"); err != nil {
		p.root.log.Warn("the mirror's worktrees were not pruned; the node prunes them when it starts again", "err", err)
	}
	return true
}

// Size is how many bytes the files under dir take, its links not followed; 0 when it
// is gone.
func Size(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return nil // unreadable: what can be read is counted
		}
		if d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}
