package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Snapshot is what a session changed in its workspace since its base, for a checkpoint:
// a git bundle of one checkpoint commit (the checkout as it was, its uncommitted and
// untracked files included, on top of the session's own commits), which needs Base.
// The checkpoint commit is on no branch: the session's own and the person's stay as
// they were.
type Snapshot struct {
	Base   string // the session's base commit
	Head   string // the checkout's HEAD: the session's own commits end there
	Commit string // the checkpoint commit, whose parent is Head
	Bundle []byte
}

// checkpointRef is where a checkout holds its latest checkpoint commit, for the bundle:
// a ref of its own worktree, which no other checkout sees.
const checkpointRef = "refs/worktree/agentmux-checkpoint"

// Snapshot takes ws as it is now. The agent may write on meanwhile: the snapshot has
// each file as it was when read. Files the repository ignores are not in it.
func (p *Provider) Snapshot(ctx context.Context, ws *Workspace) (*Snapshot, error) {
	scratch, err := p.gitPath(ctx, ws, "agentmux-checkpoint")
	if err != nil {
		return nil, err
	}
	index, bundle := scratch+".index", scratch+".bundle"
	defer os.Remove(index)
	defer os.Remove(bundle)
	head, err := p.git.run(ctx, localTimeout, ws.Path, "rev-parse", "--verify", "HEAD^{commit}")
	if err != nil {
		return nil, fmt.Errorf("workspace: read the checkout's HEAD: %w", err)
	}
	s := &Snapshot{Base: ws.Base, Head: strings.TrimSpace(head)}
	// A scratch index, so that the agent's own (what it staged) is left as it is: a copy
	// of it, whose files' stat data spares hashing the files that did not change.
	own := []string{"GIT_INDEX_FILE=" + index}
	if err := p.copyIndex(ctx, ws, index); err != nil {
		if _, err := p.git.runWith(ctx, localTimeout, ws.Path, own, "read-tree", s.Head); err != nil {
			return nil, fmt.Errorf("workspace: checkpoint: %w", err)
		}
	}
	if _, err := p.git.runWith(ctx, localTimeout, ws.Path, own, "add", "--all"); err != nil {
		return nil, fmt.Errorf("workspace: checkpoint what the session changed: %w", err)
	}
	tree, err := p.git.runWith(ctx, localTimeout, ws.Path, own, "write-tree")
	if err != nil {
		return nil, fmt.Errorf("workspace: checkpoint: %w", err)
	}
	msg := fmt.Sprintf("agentmux: checkpoint of session %s (attempt %d)\n\nAgentmux-Session: %s\n", ws.Session, ws.Attempt, ws.Session)
	commit, err := p.git.run(ctx, localTimeout, ws.Path, "-c", "user.name=agentmux", "-c", "user.email=agentmux@localhost",
		"commit-tree", strings.TrimSpace(tree), "-p", s.Head, "-m", msg)
	if err != nil {
		return nil, fmt.Errorf("workspace: checkpoint commit: %w", err)
	}
	s.Commit = strings.TrimSpace(commit)
	if _, err := p.git.run(ctx, localTimeout, ws.Path, "update-ref", checkpointRef, s.Commit); err != nil {
		return nil, fmt.Errorf("workspace: checkpoint: %w", err)
	}
	if _, err := p.git.run(ctx, localTimeout, ws.Path, "bundle", "create", "--quiet", bundle, checkpointRef, "^"+s.Base); err != nil {
		return nil, fmt.Errorf("workspace: bundle the checkpoint: %w", err)
	}
	if s.Bundle, err = os.ReadFile(bundle); err != nil {
		return nil, fmt.Errorf("workspace: read the checkpoint's bundle: %w", err)
	}
	return s, nil
}

// copyIndex copies ws's own index to path.
func (p *Provider) copyIndex(ctx context.Context, ws *Workspace, path string) error {
	index, err := p.gitPath(ctx, ws, "index")
	if err != nil {
		return err
	}
	b, err := os.ReadFile(index)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// gitPath is name's path in ws's own git directory (its worktree's, or its clone's).
func (p *Provider) gitPath(ctx context.Context, ws *Workspace, name string) (string, error) {
	path, err := p.git.run(ctx, localTimeout, ws.Path, "rev-parse", "--git-path", name)
	if err != nil {
		return "", fmt.Errorf("workspace: find the checkout's git directory: %w", err)
	}
	path = strings.TrimSpace(path)
	if !filepath.IsAbs(path) {
		path = filepath.Join(ws.Path, path)
	}
	return path, nil
}

// unbundle takes snapshot s's commits into the mirror from its bundle, for ws to be
// checked out at s.Head and its files put back (putBack). The caller holds the mirror.
func (p *Provider) unbundle(ctx context.Context, ws *Workspace, s *Snapshot) error {
	file := filepath.Join(p.root.Work(), name(ws.Session, ws.Attempt)+".bundle")
	if err := os.WriteFile(file, s.Bundle, 0o600); err != nil {
		return fmt.Errorf("workspace: write the checkpoint's bundle: %w", err)
	}
	defer os.Remove(file)
	if !p.hasCommit(ctx, s.Base) {
		return fmt.Errorf("workspace: the checkpoint's files are changes to commit %s, which the repository no longer has", s.Base)
	}
	out, err := p.git.run(ctx, localTimeout, "", "--git-dir="+p.root.mirror(), "bundle", "unbundle", file)
	if err != nil {
		return fmt.Errorf("workspace: take the checkpoint's commits: %w", err)
	}
	if !strings.Contains(out, s.Commit) {
		return fmt.Errorf("workspace: the checkpoint's bundle does not hold its commit %s", s.Commit)
	}
	return nil
}

// putBack makes ws's files what checkpoint commit s.Commit has, with its index at
// HEAD (s.Head): what was not committed then is not now.
func (p *Provider) putBack(ctx context.Context, ws *Workspace, s *Snapshot) error {
	if _, err := p.git.run(ctx, localTimeout, ws.Path, "read-tree", "-u", "--reset", s.Commit); err != nil {
		return fmt.Errorf("workspace: put the checkpoint's files back: %w", err)
	}
	if _, err := p.git.run(ctx, localTimeout, ws.Path, "reset", "--quiet", "--mixed", s.Head); err != nil {
		return fmt.Errorf("workspace: put the checkpoint's files back: %w", err)
	}
	return nil
}
