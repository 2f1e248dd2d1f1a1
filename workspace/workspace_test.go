package workspace

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/internal/procenv"
)

// gitIn runs git in dir as a person would, failing the test on an error.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

// repo makes a repository with one commit on main: a README.
func repo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	if err := os.MkdirAll(filepath.Join(dir, "svc"), 0o755); err != nil {
		t.Fatal(err)
	}
	gitIn(t, dir, "init", "--quiet", "--initial-branch=main")
	write(t, filepath.Join(dir, "README"), "hello\n")
	write(t, filepath.Join(dir, "svc", "main.go"), "package main\n")
	gitIn(t, dir, "add", ".")
	gitIn(t, dir, "commit", "--quiet", "-m", "first")
	return dir
}

func write(t testing.TB, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func spec(mode, repo string) config.Workspace {
	return config.Workspace{Mode: mode, Repo: repo, Branch: config.DefaultBranch, Keep: config.KeepOnFailure}
}

func provider(t testing.TB, s config.Workspace) *Provider {
	t.Helper()
	root, err := OpenRoot(filepath.Join(t.TempDir(), "ws", "node", "host"), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return root.Provider("host", s, procenv.Build(nil, nil), nil)
}

// TestTwentySessionsAtOnce: twenty sessions open worktrees of one repository at once,
// each writes a file of its own and commits one of them; each branch then holds its
// session's file and no other, and the repository a person works in is untouched.
func TestTwentySessionsAtOnce(t *testing.T) {
	for _, mode := range []string{config.WorkspaceWorktree, config.WorkspaceClone} {
		t.Run(mode, func(t *testing.T) {
			src := repo(t)
			before := gitIn(t, src, "for-each-ref")
			p := provider(t, spec(mode, src))
			ctx := context.Background()
			const n = 20
			var wg sync.WaitGroup
			errs := make(chan error, n)
			for i := range n {
				wg.Go(func() {
					session := fmt.Sprintf("s-%02d", i)
					ws, err := p.Open(ctx, session, 1, From{})
					if err != nil {
						errs <- err
						return
					}
					if err := os.WriteFile(filepath.Join(ws.Cwd, session+".txt"), []byte(session+"\n"), 0o644); err != nil {
						errs <- err
						return
					}
					res := p.Close(ctx, ws, true)
					if res.Error != "" || !res.Dirty || !res.Committed || res.Files != 1 || res.Insertions != 1 || res.Path != "" {
						errs <- fmt.Errorf("%s: %+v; want one file committed, the checkout removed", session, res)
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			mirror := p.root.mirror()
			for i := range n {
				files := gitIn(t, "", "--git-dir="+mirror, "ls-tree", "--name-only", "agentmux/"+fmt.Sprintf("s-%02d", i))
				if want := fmt.Sprintf("README\ns-%02d.txt\nsvc", i); files != want {
					t.Errorf("branch agentmux/s-%02d holds %q; want %q", i, files, want)
				}
			}
			if after := gitIn(t, src, "for-each-ref"); after != before {
				t.Errorf("the repository's refs changed:\n%s\nwant\n%s", after, before)
			}
			if st := gitIn(t, src, "status", "--porcelain"); st != "" {
				t.Errorf("the repository's checkout changed:\n%s", st)
			}
			if left, _ := os.ReadDir(p.root.Work()); len(left) != 1 {
				t.Errorf("left in work/: %v; want the mirror alone", left)
			}
			if recs, _ := p.root.Records(); len(recs) != 0 {
				t.Errorf("records left: %v", recs)
			}
		})
	}
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// execIn runs git in dir as a person would.
func execIn(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	return cmd.CombinedOutput()
}
