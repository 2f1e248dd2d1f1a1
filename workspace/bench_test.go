package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentmux/agentmux/config"
)

// BenchmarkOpenClose: a session's workspace opened (fetch, checkout) and closed with
// one file committed, on a repository of 2,000 files of 4 KiB, as a worktree and as a
// clone; it reports the checkout's bytes beside the time.
func BenchmarkOpenClose(b *testing.B) {
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
