package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/wire"
)

// Provider opens and closes the workspaces of one host table (Root.Provider).
type Provider struct {
	root    *Root
	host    string
	spec    config.Workspace
	git     git
	pushGit git // the push's: PushWith may give it a sandbox of its own
}

// Workspace is one session attempt's checkout.
type Workspace struct {
	Session string
	Attempt int
	Mode    string
	Path    string // the checkout's top
	Cwd     string // where the agent starts: Path, or the working_dir's place in it
	Branch  string
	Base    string // the commit the branch started from
	opened  time.Time
}

// Root is the root p's workspaces are in.
func (p *Provider) Root() *Root { return p.root }

// From is where a workspace starts when not at the host's base on its session's branch.
type From struct {
	// Name names the branch in place of the session's id (a pipeline run's id).
	Name string
	// Commit is the commit the branch starts at, in place of base (the head an earlier
	// stage of the run left).
	Commit string
	// Mirror is the mirror that holds Commit on Name's branch: an earlier stage's, on
	// another host of this machine. Commit is fetched from it when this host's mirror
	// lacks it.
	Mirror string
	// Snapshot is the checkpoint of an earlier attempt the session goes on from: the
	// workspace starts as it was then (nil: from base).
	Snapshot *Snapshot
}

// Open makes attempt's workspace of session: it fetches the repository into the mirror,
// and checks the session's branch out at base in a checkout of its own. An attempt after
// the first starts from base again, on a fresh checkout.
func (p *Provider) Open(ctx context.Context, session string, attempt int, from From) (*Workspace, error) {
	if !wire.IsName(session) {
		return nil, fmt.Errorf("workspace: session id %q is not a name a directory can take", session)
	}
	branch := p.spec.BranchOf(session)
	if from.Name != "" {
		branch = p.spec.BranchOf(from.Name)
	}
	ws := &Workspace{Session: session, Attempt: attempt, Mode: p.spec.Mode, Branch: branch, opened: time.Now(),
		Path: filepath.Join(p.root.Work(), name(session, attempt))}
	ws.Cwd = ws.Path
	if p.spec.Subdir != "" {
		ws.Cwd = filepath.Join(ws.Path, p.spec.Subdir)
	}
	// Recorded first: a node that dies from here on finds the checkout and removes it.
	if err := p.root.write(ws.record(p.host, StateOpen, nil)); err != nil {
		return nil, err
	}
	if err := p.checkout(ctx, ws, from); err != nil {
		p.remove(context.WithoutCancel(ctx), ws)
		p.root.forget(session, attempt)
		return nil, err
	}
	if err := p.root.write(ws.record(p.host, StateOpen, nil)); err != nil {
		p.remove(context.WithoutCancel(ctx), ws)
		p.root.forget(session, attempt)
		return nil, err
	}
	if st, err := os.Stat(ws.Cwd); err != nil || !st.IsDir() {
		p.remove(context.WithoutCancel(ctx), ws)
		p.root.forget(session, attempt)
		return nil, fmt.Errorf("workspace: the host's working_dir is %s in the repository, which base %s does not have", p.spec.Subdir, p.baseName())
	}
	return ws, nil
}

func (ws *Workspace) record(host, state string, res *wire.Workspace) *Record {
	return &Record{Session: ws.Session, Attempt: ws.Attempt, Host: host, Mode: ws.Mode, Path: ws.Path, Branch: ws.Branch,
		Base: ws.Base, State: state, Opened: ws.opened, Result: res}
}

// checkout fetches and checks ws's branch out at base, or at from's commit when it names one.
func (p *Provider) checkout(ctx context.Context, ws *Workspace, from From) error {
	p.root.mu.Lock()
	defer p.root.mu.Unlock()
	if err := p.fetch(ctx); err != nil {
		return err
	}
	base, err := p.resolveBase(ctx, ws.Branch, from)
	if err != nil {
		return err
	}
	ws.Base = base
	if s := from.Snapshot; s != nil { // at its HEAD then, with its files put back after
		if err := p.unbundle(ctx, ws, s); err != nil {
			return err
		}
		ws.Base, base = s.Base, s.Head
	}
	if err := p.checkoutAt(ctx, ws, base); err != nil {
		return err
	}
	if from.Snapshot != nil {
		return p.putBack(ctx, ws, from.Snapshot)
	}
	return nil
}

// checkoutAt checks ws out at commit, on its branch in a clone, detached in a worktree.
func (p *Provider) checkoutAt(ctx context.Context, ws *Workspace, base string) error {
	mirror := "--git-dir=" + p.root.mirror()
	if err := os.RemoveAll(ws.Path); err != nil { // an attempt's number is used once, but a crash may have left it
		return fmt.Errorf("workspace: clear %s: %w", ws.Path, err)
	}
	if ws.Mode == config.WorkspaceClone {
		// --shared: the clone reads the mirror's objects where they are and writes its
		// own in itself. Hard links (a local clone's default) would let the session
		// rewrite the mirror's object files through its own.
		if _, err := p.git.run(ctx, localTimeout, "", "clone", "--quiet", "--shared", "--no-checkout", "--", p.root.mirror(), ws.Path); err != nil {
			return fmt.Errorf("workspace: clone the mirror: %w", err)
		}
		if _, err := p.git.run(ctx, localTimeout, ws.Path, "checkout", "--quiet", "-B", ws.Branch, base); err != nil {
			return fmt.Errorf("workspace: check out %s: %w", ws.Branch, err)
		}
		return nil
	}
	// Detached at base: the session's commits move its worktree's own HEAD, which no
	// other session may write, and never a ref of the mirror, which they share; Close
	// puts that HEAD on the session's branch.
	if _, err := p.git.run(ctx, localTimeout, "", mirror, "worktree", "add", "--quiet", "--detach", ws.Path, base); err != nil {
		return fmt.Errorf("workspace: add a worktree at %s: %w", base, err)
	}
	return nil
}

// Writes are what ws's agent must write, and all it may of the host's workspaces (its
// sandbox's walls): its checkout; and for a worktree, its own administrative directory
// in the mirror (HEAD, index) and the mirror's objects, where its commits go.
func (p *Provider) Writes(ws *Workspace) ([]string, error) {
	if ws.Mode == config.WorkspaceClone {
		return []string{ws.Path}, nil
	}
	b, err := os.ReadFile(filepath.Join(ws.Path, ".git"))
	if err != nil {
		return nil, fmt.Errorf("workspace: read the worktree's .git: %w", err)
	}
	admin, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
	if !ok || !filepath.IsAbs(admin) || filepath.Dir(admin) != filepath.Join(p.root.mirror(), "worktrees") {
		return nil, fmt.Errorf("workspace: the worktree's .git says %q, not a worktree of the mirror", b)
	}
	return []string{ws.Path, admin, filepath.Join(p.root.mirror(), "objects")}, nil
}

// fetch brings the mirror up to the repository's branches, tags and HEAD, making the
// mirror the first time. The repository is named on the command line, never as a
// remote of the mirror's configuration, which the agents may write.
func (p *Provider) fetch(ctx context.Context) error {
	mirror := p.root.mirror()
	if _, err := os.Stat(filepath.Join(mirror, "HEAD")); errors.Is(err, os.ErrNotExist) {
		if _, err := p.git.run(ctx, localTimeout, "", "init", "--quiet", "--bare", mirror); err != nil {
			return fmt.Errorf("workspace: make the mirror: %w", err)
		}
	}
	_, err := p.git.run(ctx, fetchTimeout, "", "--git-dir="+mirror, "fetch", "--quiet", "--no-tags", "--force", "--", p.spec.Repo,
		"+HEAD:refs/remotes/origin/HEAD", "+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*")
	if err != nil {
		return fmt.Errorf("workspace: fetch %s: %w; check repo (a path or URL of a repository with at least one commit)", p.spec.Repo, err)
	}
	return nil
}

// resolveBase is the commit base names: the repository's HEAD by default, else its
// branch, its tag or a commit of that name; or from's commit, when it names one, fetched
// on branch from from's mirror when this one lacks it.
func (p *Provider) resolveBase(ctx context.Context, branch string, from From) (string, error) {
	commit := from.Commit
	candidates := []string{"refs/remotes/origin/HEAD"}
	if b := p.spec.Base; b != "" {
		candidates = []string{"refs/remotes/origin/" + b, "refs/tags/" + b, b}
	}
	if commit != "" {
		if p.hasCommit(ctx, commit) {
			return commit, nil
		}
		if from.Mirror == "" || from.Mirror == p.root.mirror() {
			return "", fmt.Errorf("workspace: commit %s, where the earlier stage ended, is not in this host's mirror; set push on the hosts so that the run's branch reaches the repository", commit)
		}
		if _, err := os.Stat(filepath.Join(from.Mirror, "HEAD")); err != nil {
			return "", fmt.Errorf("workspace: commit %s, where the earlier stage ended, is in %s, not on this machine: that stage ran on another node; set push on the hosts so that the run's branch reaches the repository", commit, from.Mirror)
		}
		if _, err := p.git.run(ctx, fetchTimeout, "", "--git-dir="+p.root.mirror(), "fetch", "--quiet", "--no-tags", "--", from.Mirror, "refs/heads/"+branch); err != nil {
			return "", fmt.Errorf("workspace: fetch %s from the earlier stage's mirror %s: %w", branch, from.Mirror, err)
		}
		if !p.hasCommit(ctx, commit) {
			return "", fmt.Errorf("workspace: %s in the earlier stage's mirror %s no longer ends at %s, where that stage ended; the run cannot go on from it", branch, from.Mirror, commit)
		}
		return commit, nil
	}
	for _, c := range candidates {
		out, err := p.git.run(ctx, localTimeout, "", "--git-dir="+p.root.mirror(), "rev-parse", "--verify", "--quiet", "--end-of-options", c+"^{commit}")
		if err == nil {
			return strings.TrimSpace(out), nil
		}
	}
	return "", fmt.Errorf("workspace: base %s is not a branch, tag or commit of %s; check base", p.baseName(), p.spec.Repo)
}

// hasCommit reports whether the mirror holds commit.
func (p *Provider) hasCommit(ctx context.Context, commit string) bool {
	_, err := p.git.run(ctx, localTimeout, "", "--git-dir="+p.root.mirror(), "cat-file", "-e", "--end-of-options", commit+"^{commit}")
	return err == nil
}

func (p *Provider) baseName() string {
	if p.spec.Base == "" {
		return "HEAD"
	}
	return p.spec.Base
}
