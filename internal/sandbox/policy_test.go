package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestCarve checks which rules a tree with a denied path inside comes to: every
// sibling on the way down, not the path, not its ancestors, not a symbolic link.
func TestCarve(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"a/b/deny/x", "a/b/keep", "a/other", "c"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "a", "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "a", "b", "deny"), filepath.Join(root, "a", "link")); err != nil {
		t.Fatal(err)
	}
	got, err := carve(root, true, []string{filepath.Join(root, "a", "b", "deny"), filepath.Join(root, "a", "b", "notyet")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, g := range got {
		if !g.write {
			t.Errorf("%s granted read only", g.path)
		}
		paths = append(paths, g.path[len(root):])
		if g.dir != (g.path[len(root):] != "/a/file") {
			t.Errorf("%s: dir = %v", g.path, g.dir)
		}
	}
	slices.Sort(paths)
	if want := []string{"/a/b/keep", "/a/file", "/a/other", "/c"}; !slices.Equal(paths, want) {
		t.Fatalf("carve granted %q, want %q", paths, want)
	}
	if got, _ := carve(filepath.Join(root, "a", "b", "deny", "x"), false, []string{filepath.Join(root, "a", "b", "deny")}, nil); len(got) != 0 {
		t.Fatalf("a path within a denied one was granted: %v", got)
	}
}

// TestResolveFollowsLinks checks that a denied path named through a link is denied
// where it lies, and that one yet to be made keeps its name under its real parent.
func TestResolveFollowsLinks(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "real"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	got, err := resolve(filepath.Join(root, "link", "store", "later"))
	if want := filepath.Join(root, "real", "store", "later"); err != nil || got != want {
		t.Fatalf("resolve = %q, %v; want %q", got, err, want)
	}
}

// TestCarvedNamesTheWritablePathsThatLoseCreation checks what a node warns about: a
// writable directory holding a denied path.
func TestCarvedNamesTheWritablePathsThatLoseCreation(t *testing.T) {
	root := t.TempDir()
	work, store := filepath.Join(root, "work"), filepath.Join(root, "store")
	p := Policy{Write: []string{root, work}, ReadDeny: []string{store}, WriteDeny: []string{filepath.Join(work, "agentmux.toml")}}
	got := p.Carved()
	want := [][2]string{{root, store}, {work, filepath.Join(work, "agentmux.toml")}}
	if !slices.Equal(got, want) {
		t.Fatalf("Carved = %q, want %q", got, want)
	}
	if got := (Policy{Write: []string{work}, ReadDeny: []string{store, work}}).Carved(); len(got) != 0 {
		t.Fatalf("a writable path that is itself denied is not carved, it is gone: %q", got)
	}
}
