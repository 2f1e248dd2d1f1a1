package workspace

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/config"
)

// TestASnapshotGoesOnOnAnotherNode: a session committed one file, changed another
// without committing, staged a third and left a fourth untracked; its snapshot, opened
// by another node's provider (a root of its own, the same repository), gives the next
// attempt the same files, the same HEAD and the same uncommitted changes, on either
// kind of checkout. The session's index, its branch and the person's repository are
// as they were.
func TestASnapshotGoesOnOnAnotherNode(t *testing.T) {
	for _, mode := range []string{config.WorkspaceWorktree, config.WorkspaceClone} {
		t.Run(mode, func(t *testing.T) {
			src := repo(t)
			ctx := context.Background()
			first := provider(t, spec(mode, src))
			ws, err := first.Open(ctx, "s-move", 0, From{})
			if err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(ws.Path, "done.txt"), "committed\n")
			gitIn(t, ws.Path, "add", "done.txt")
			gitIn(t, ws.Path, "commit", "--quiet", "-m", "the agent's own commit")
			write(t, filepath.Join(ws.Path, "README"), "changed, not committed\n")
			write(t, filepath.Join(ws.Path, "staged.txt"), "staged\n")
			gitIn(t, ws.Path, "add", "staged.txt")
			write(t, filepath.Join(ws.Path, "new.txt"), "untracked\n")
			status := gitIn(t, ws.Path, "status", "--porcelain")
			head := gitIn(t, ws.Path, "rev-parse", "HEAD")

			s, err := first.Snapshot(ctx, ws)
			if err != nil {
				t.Fatal(err)
			}
			if s.Head != head || s.Base != ws.Base || len(s.Bundle) == 0 {
				t.Fatalf("snapshot %+v; want HEAD %s on base %s, and a bundle", s, head, ws.Base)
			}
			if got := gitIn(t, ws.Path, "status", "--porcelain"); got != status {
				t.Errorf("the snapshot changed the session's index: %q; want %q", got, status)
			}
			if b := gitIn(t, src, "branch", "--list"); b != "* main" {
				t.Errorf("the person's repository has branches %q", b)
			}

			second := provider(t, spec(mode, src))
			moved, err := second.Open(ctx, "s-move", 1, From{Snapshot: &Snapshot{Base: s.Base, Head: s.Head, Commit: s.Commit, Bundle: s.Bundle}})
			if err != nil {
				t.Fatal(err)
			}
			if got := gitIn(t, moved.Path, "rev-parse", "HEAD"); got != head || moved.Base != ws.Base {
				t.Errorf("the moved checkout is at %s on base %s; want %s on %s", got, moved.Base, head, ws.Base)
			}
			for file, want := range map[string]string{"done.txt": "committed\n", "README": "changed, not committed\n", "staged.txt": "staged\n", "new.txt": "untracked\n"} {
				if b, err := os.ReadFile(filepath.Join(moved.Path, file)); err != nil || string(b) != want {
					t.Errorf("%s in the moved checkout: %q (%v); want %q", file, b, err, want)
				}
			}
			// What was uncommitted is uncommitted still (gitIn trims the first line's space);
			// staged is not kept apart.
			if got, want := gitIn(t, moved.Path, "status", "--porcelain"), "M README\n?? new.txt\n?? staged.txt"; got != want {
				t.Errorf("the moved checkout's status is %q; want %q", got, want)
			}
			res := second.Close(ctx, moved, true)
			if res.Error != "" || !res.Committed || res.Files != 4 {
				t.Errorf("the moved session's end: %+v; want what it left committed, four files changed from its base", res)
			}
		})
	}
}

// TestASnapshotOfAGoneBaseSaysSo: a snapshot whose base the repository no longer has
// is refused with what is missing.
func TestASnapshotOfAGoneBaseSaysSo(t *testing.T) {
	src := repo(t)
	ctx := context.Background()
	p := provider(t, spec(config.WorkspaceWorktree, src))
	ws, err := p.Open(ctx, "s-gone", 0, From{})
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(ws.Path, "a.txt"), "a\n")
	s, err := p.Snapshot(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	s.Base = "0123456789012345678901234567890123456789"
	other := provider(t, spec(config.WorkspaceWorktree, src))
	if _, err := other.Open(ctx, "s-gone", 1, From{Snapshot: s}); err == nil || !containsAll(err.Error(), s.Base, "no longer has") {
		t.Fatalf("open from a snapshot of a gone base: %v", err)
	}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// TestTheMirrorDropsSupersededCheckpoints: the checkpoint commits a worktree's session
// wrote, each superseding the last, are collected from the mirror once the worktree is
// removed.
func TestTheMirrorDropsSupersededCheckpoints(t *testing.T) {
	src := repo(t)
	ctx := context.Background()
	p := provider(t, spec(config.WorkspaceWorktree, src))
	p.root.collected = collection{grace: "now"}
	ws, err := p.Open(ctx, "s-gc", 0, From{})
	if err != nil {
		t.Fatal(err)
	}
	var commits []string
	for i := range 3 {
		write(t, filepath.Join(ws.Path, "step.txt"), fmt.Sprintf("step %d\n", i))
		s, err := p.Snapshot(ctx, ws)
		if err != nil {
			t.Fatal(err)
		}
		commits = append(commits, s.Commit)
	}
	mirror := p.root.mirror()
	exists := func(commit string) bool {
		return exec.Command("git", "--git-dir="+mirror, "cat-file", "-e", commit).Run() == nil
	}
	for _, c := range commits {
		if !exists(c) {
			t.Fatalf("checkpoint commit %s is not in the mirror before the collection", c)
		}
	}
	p.Discard(ctx, ws)
	for _, c := range commits {
		if exists(c) {
			t.Errorf("checkpoint commit %s is still in the mirror after its worktree went", c)
		}
	}
	if !exists(ws.Base) {
		t.Errorf("the base %s went with the checkpoints", ws.Base)
	}
}
