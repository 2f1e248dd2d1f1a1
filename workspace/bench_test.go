package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentmux/agentmux/config"
)

// benchRepo is a repository of 2,000 files of 4 KiB in 20 folders.
func benchRepo(b *testing.B) string {
	src := filepath.Join(b.TempDir(), "repo")
	for d := range 20 {
		dir := filepath.Join(src, fmt.Sprintf("pkg%02d", d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 100 {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.go", f)), make([]byte, 4096), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, args := range [][]string{{"init", "--quiet", "--initial-branch=main"}, {"add", "."}, {"commit", "--quiet", "-m", "first"}} {
		if out, err := execIn(src, args...); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return src
}

// BenchmarkSnapshot: a checkpoint's workspace, of a session that changed 20 files of a
// 2,000-file repository and added 5; it reports the bundle's bytes beside the time.
func BenchmarkSnapshot(b *testing.B) {
	src := benchRepo(b)
	p := provider(b, spec(config.WorkspaceWorktree, src))
	ctx := context.Background()
	ws, err := p.Open(ctx, "s-snap", 0, From{})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 20 {
		write(b, filepath.Join(ws.Path, fmt.Sprintf("pkg%02d", i), "f000.go"), fmt.Sprintf("package pkg%02d // changed\n", i))
	}
	for i := range 5 {
		write(b, filepath.Join(ws.Path, fmt.Sprintf("new%d.go", i)), "package main\n")
	}
	var bundle int
	for b.Loop() {
		s, err := p.Snapshot(ctx, ws)
		if err != nil {
			b.Fatal(err)
		}
		bundle = len(s.Bundle)
	}
	b.ReportMetric(float64(bundle), "bundle-bytes")
}

// BenchmarkOpenClose: a session's workspace opened (fetch, checkout) and closed with
// one file committed, on a repository of 2,000 files of 4 KiB, as a worktree and as a
// clone; it reports the checkout's bytes beside the time.
func BenchmarkOpenClose(b *testing.B) {
	src := benchRepo(b)
	for _, mode := range []string{config.WorkspaceWorktree, config.WorkspaceClone} {
		b.Run(mode, func(b *testing.B) {
			root, err := OpenRoot(filepath.Join(b.TempDir(), "ws"), discard())
			if err != nil {
				b.Fatal(err)
			}
			s := spec(mode, src)
			s.Keep = config.KeepNever
			p := root.Provider("h", s, nil, nil)
			ctx := context.Background()
			var bytes int64
			i := 0
			for b.Loop() {
				ws, err := p.Open(ctx, fmt.Sprintf("s-%d", i), 0, From{})
				if err != nil {
					b.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(ws.Path, "new.txt"), []byte("x\n"), 0o644); err != nil {
					b.Fatal(err)
				}
				res := p.Close(ctx, ws, true)
				if res.Error != "" || res.Files != 1 {
					b.Fatalf("%+v", res)
				}
				bytes = res.Bytes
				i++
			}
			b.ReportMetric(float64(bytes), "checkout-bytes")
		})
	}
}
