package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/config"
)

// TestRetryStartsFresh: a failed attempt's checkout is kept (keep = on_failure), with
// its work on the branch; the next attempt starts from base on a fresh checkout, and
// the branch is then what it did.
func TestRetryStartsFresh(t *testing.T) {
	src := repo(t)
	p := provider(t, spec(config.WorkspaceWorktree, src))
	ctx := context.Background()
	first, err := p.Open(ctx, "s-r", 1, From{})
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(first.Path, "half.txt"), "half\n")
	res := p.Close(ctx, first, false)
	if res.Path != first.Path || !res.Committed || res.Error != "" {
		t.Fatalf("failed attempt: %+v; want it kept, its work committed", res)
	}
	second, err := p.Open(ctx, "s-r", 2, From{})
	if err != nil {
		t.Fatalf("the retry's workspace: %v", err)
	}
	if second.Path == first.Path || second.Base != first.Base {
		t.Fatalf("retry at %s on %s; want a fresh checkout on base %s", second.Path, second.Base, first.Base)
	}
	// The checkouts are the host's alone: other users of the machine cannot list them.
	if info, err := os.Stat(filepath.Dir(second.Path)); err != nil {
		t.Error(err)
	} else if info.Mode().Perm() != 0o700 {
		t.Errorf("the checkouts' folder %s is mode %v; want 0700", filepath.Dir(second.Path), info.Mode().Perm())
	}
	if _, err := os.Stat(filepath.Join(second.Path, "half.txt")); err == nil {
		t.Fatal("the retry sees the failed attempt's file")
	}
	write(t, filepath.Join(second.Path, "whole.txt"), "whole\n")
	gitIn(t, second.Path, "add", "whole.txt")
	gitIn(t, second.Path, "commit", "--quiet", "-m", "the agent's own commit")
	res = p.Close(ctx, second, true)
	if res.Dirty || res.Committed || res.Files != 1 || res.Path != "" {
		t.Fatalf("retry: %+v; want its own commit, nothing left, the checkout removed", res)
	}
	if files := gitIn(t, "", "--git-dir="+p.root.mirror(), "ls-tree", "--name-only", "agentmux/s-r"); files != "README\nsvc\nwhole.txt" {
		t.Errorf("the branch holds %q; want the retry's work alone", files)
	}
	if recs, _ := p.root.Records(); len(recs) != 1 || recs[0].State != StateKept || recs[0].Attempt != 1 {
		t.Errorf("records %+v; want the kept first attempt's", recs)
	}
}

// TestReclaimAfterACrash: a node that died left a checkout open and another it never
// recorded; the next Reclaim removes both, keeps what keep kept, and the session's next
// attempt checks its branch out again.
func TestReclaimAfterACrash(t *testing.T) {
	src := repo(t)
	s := spec(config.WorkspaceWorktree, src)
	s.Keep = config.KeepAlways
	p := provider(t, s)
	ctx := context.Background()
	kept, err := p.Open(ctx, "s-kept", 1, From{})
	if err != nil {
		t.Fatal(err)
	}
	p.Close(ctx, kept, true)
	open, err := p.Open(ctx, "s-crash", 1, From{})
	if err != nil {
		t.Fatal(err)
	}
	stray := filepath.Join(p.root.Work(), "s-stray.1")
	if err := os.MkdirAll(stray, 0o755); err != nil {
		t.Fatal(err)
	}
	removed, err := p.Reclaim(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(removed, ",") != open.Path+","+stray && strings.Join(removed, ",") != stray+","+open.Path {
		t.Errorf("reclaimed %v; want %s and %s", removed, open.Path, stray)
	}
	if _, err := os.Stat(kept.Path); err != nil {
		t.Errorf("the kept workspace is gone: %v", err)
	}
	if wt := gitIn(t, "", "--git-dir="+p.root.mirror(), "worktree", "list"); strings.Contains(wt, "s-crash") {
		t.Errorf("the mirror still lists the crashed worktree:\n%s", wt)
	}
	again, err := p.Open(ctx, "s-crash", 2, From{})
	if err != nil {
		t.Fatalf("the next attempt after the crash: %v", err)
	}
	p.Close(ctx, again, true)
}

// TestBaseBranchAndSubdir: base names a branch of the repository; the agent starts in
// the working_dir's place in the checkout; push = "origin" would write the repository,
// so a bare repository stands in as the push target, and gets the branch only when the
// session ended ok.
func TestBaseBranchAndSubdir(t *testing.T) {
	src := repo(t)
	gitIn(t, src, "switch", "--quiet", "-c", "release")
	write(t, filepath.Join(src, "RELEASE"), "1.0\n")
	gitIn(t, src, "add", "RELEASE")
	gitIn(t, src, "commit", "--quiet", "-m", "release")
	gitIn(t, src, "switch", "--quiet", "main")
	target := filepath.Join(t.TempDir(), "target.git")
	gitIn(t, "", "init", "--quiet", "--bare", target)
	s := spec(config.WorkspaceClone, src)
	s.Base, s.Subdir, s.Push, s.Keep = "release", "svc", target, config.KeepNever
	p := provider(t, s)
	ctx := context.Background()
	ws, err := p.Open(ctx, "s-b", 1, From{})
	if err != nil {
		t.Fatal(err)
	}
	if ws.Cwd != filepath.Join(ws.Path, "svc") {
		t.Errorf("the agent starts in %s; want the checkout's svc", ws.Cwd)
	}
	if _, err := os.Stat(filepath.Join(ws.Path, "RELEASE")); err != nil {
		t.Errorf("the checkout is not of base release: %v", err)
	}
	write(t, filepath.Join(ws.Cwd, "main.go"), "package main\n\nfunc main() {}\n")
	res := p.Close(ctx, ws, true)
	if res.Pushed != target || res.Files != 1 || res.Insertions != 2 || res.Error != "" {
		t.Fatalf("%+v; want main.go changed by two lines, pushed", res)
	}
	if head := gitIn(t, "", "--git-dir="+target, "rev-parse", "agentmux/s-b"); head != res.Head {
		t.Errorf("the push target has agentmux/s-b at %s; want %s", head, res.Head)
	}
	failed, err := p.Open(ctx, "s-f", 1, From{})
	if err != nil {
		t.Fatal(err)
	}
	p.Close(ctx, failed, false)
	if out, err := execGit("--git-dir="+target, "rev-parse", "--verify", "--quiet", "agentmux/s-f"); err == nil {
		t.Errorf("a failed session's branch was pushed: %s", out)
	}
}

// TestAgentsHooksDoNotRunForAgentmux: an agent that writes a post-commit hook and a
// file-system monitor into the mirror's configuration gets neither run when agentmux
// commits what it left.
func TestAgentsHooksDoNotRunForAgentmux(t *testing.T) {
	src := repo(t)
	p := provider(t, spec(config.WorkspaceWorktree, src))
	ctx := context.Background()
	ws, err := p.Open(ctx, "s-h", 1, From{})
	if err != nil {
		t.Fatal(err)
	}
	proof := filepath.Join(t.TempDir(), "ran")
	hook := filepath.Join(p.root.mirror(), "hooks", "post-commit")
	write(t, hook, "#!/bin/sh\ntouch "+proof+"\n")
	if err := os.Chmod(hook, 0o755); err != nil {
		t.Fatal(err)
	}
	gitIn(t, ws.Path, "config", "core.fsmonitor", "touch "+proof+"; false")
	write(t, filepath.Join(ws.Path, "x.txt"), "x\n")
	res := p.Close(ctx, ws, true)
	if !res.Committed || res.Error != "" {
		t.Fatalf("%+v; want what it left committed", res)
	}
	if _, err := os.Stat(proof); err == nil {
		t.Error("the agent's hook or monitor ran for agentmux")
	}
}

// TestLeftUncommitted: with commit = false, what a session left stays out of its branch
// and is reported dirty; a base that does not exist is refused with what to check.
func TestLeftUncommitted(t *testing.T) {
	src := repo(t)
	s := spec(config.WorkspaceWorktree, src)
	no := false
	s.Commit, s.Keep = &no, config.KeepAlways
	p := provider(t, s)
	ctx := context.Background()
	ws, err := p.Open(ctx, "s-u", 1, From{})
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(ws.Path, "y.txt"), "y\n")
	res := p.Close(ctx, ws, true)
	if !res.Dirty || res.Committed || res.Files != 0 || res.Head != res.Base || res.Path != ws.Path {
		t.Fatalf("%+v; want it dirty, not committed, the branch at base, the checkout kept", res)
	}
	s.Base = "no-such-branch"
	_, err = provider(t, s).Open(ctx, "s-x", 1, From{})
	if err == nil || !strings.Contains(err.Error(), "base no-such-branch is not a branch, tag or commit") {
		t.Errorf("a missing base: %v", err)
	}
}

// TestRepositoryByURL: a repository named by URL is fetched into the mirror as one named
// by path is.
func TestRepositoryByURL(t *testing.T) {
	src := repo(t)
	bare := filepath.Join(t.TempDir(), "origin.git")
	gitIn(t, "", "clone", "--quiet", "--bare", src, bare)
	p := provider(t, spec(config.WorkspaceWorktree, "file://"+bare))
	ctx := context.Background()
	ws, err := p.Open(ctx, "s-url", 1, From{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ws.Path, "README")); err != nil {
		t.Errorf("the checkout of the URL's repository: %v", err)
	}
	if res := p.Close(ctx, ws, true); res.Error != "" || res.Mirror != p.root.mirror() {
		t.Errorf("%+v", res)
	}
}

// TestUnsettledWorkIsKept: a checkout whose work cannot be committed (its index is
// locked) is kept even with keep = "never", and its result says why.
func TestUnsettledWorkIsKept(t *testing.T) {
	src := repo(t)
	s := spec(config.WorkspaceClone, src)
	s.Keep = config.KeepNever
	p := provider(t, s)
	ctx := context.Background()
	ws, err := p.Open(ctx, "s-lock", 1, From{})
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(ws.Path, "work.txt"), "work\n")
	write(t, filepath.Join(ws.Path, ".git", "index.lock"), "")
	res := p.Close(ctx, ws, true)
	if res.Path != ws.Path || !strings.Contains(res.Error, "index.lock") {
		t.Fatalf("%+v; want the checkout kept, saying why", res)
	}
	if _, err := os.Stat(filepath.Join(ws.Path, "work.txt")); err != nil {
		t.Errorf("the work is gone: %v", err)
	}
}

func execGit(args ...string) (string, error) {
	out, err := (git{}).run(context.Background(), localTimeout, "", args...)
	return out, err
}
