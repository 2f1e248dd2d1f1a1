package testdeps

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestEnsureBuildsOnceIntoTheCache: a program not on PATH is built from its module at
// its version into the user's cache, once, however many ask for it at once; it runs;
// and the next ask finds it there without building.
func TestEnsureBuildsOnceIntoTheCache(t *testing.T) {
	keepGoCaches(t)
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("HOME", cache) // macOS's cache is under HOME
	goBin := filepath.Dir(goPath(t))
	t.Setenv("PATH", goBin) // go, and nothing named nk
	// nkeys' nk: a small module, already in the module cache as agentmux's dependency.
	nk := program{name: "nk", pkg: "github.com/nats-io/nkeys/nk", version: "v0.4.16"}

	var (
		mu     sync.Mutex
		builds int
		wg     sync.WaitGroup
		paths  [3]string
		errs   [3]error
	)
	logf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if strings.HasPrefix(fmt.Sprintf(format, args...), "building nk ") {
			builds++
		}
	}
	for i := range paths {
		wg.Go(func() { paths[i], errs[i] = ensure(nk, logf) })
	}
	wg.Wait()
	want := filepath.Join(cache, "agentmux", "tools", "nk@v0.4.16", "nk")
	for i := range paths {
		if errs[i] != nil || paths[i] != want {
			t.Fatalf("ensure %d: %q, %v; want %s", i, paths[i], errs[i], want)
		}
	}
	if builds != 1 {
		t.Errorf("three asks at once built nk %d times; want once", builds)
	}
	out, err := exec.Command(want, "-gen", "user").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "SU") {
		t.Fatalf("the built nk -gen user: %v, %q; want a user seed", err, out)
	}
	if path, err := ensure(nk, func(string, ...any) { t.Error("built again") }); err != nil || path != want {
		t.Fatalf("the second ensure: %q, %v", path, err)
	}
	entries, _ := os.ReadDir(filepath.Join(cache, "agentmux", "tools"))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "build-") {
			t.Errorf("a build's module was left behind: %s", e.Name())
		}
	}
}

// TestEnsureSaysWhyABuildFailed: a version that does not exist fails with go's own
// words, and leaves nothing in the cache.
func TestEnsureSaysWhyABuildFailed(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("HOME", cache)
	t.Setenv("GOPROXY", "off") // nothing beyond the module cache: no such version there
	_, err := ensure(program{name: "nk-none", pkg: "github.com/nats-io/nkeys/nk", version: "v0.0.1"}, func(string, ...any) {})
	if err == nil || !strings.Contains(err.Error(), "build nk-none: go get -tool github.com/nats-io/nkeys/nk@v0.0.1") {
		t.Fatalf("ensure of a version that does not exist: %v", err)
	}
	if _, err := os.Stat(filepath.Join(cache, "agentmux", "tools", "nk-none@v0.0.1")); err == nil {
		t.Error("a failed build left its program's directory")
	}
}

// keepGoCaches pins go's module and build caches where they are, before a test moves
// HOME and XDG_CACHE_HOME (which they follow): the build then needs neither the
// network nor a cold compile.
func keepGoCaches(t *testing.T) {
	t.Helper()
	out, err := exec.Command(goPath(t), "env", "GOMODCACHE", "GOCACHE").Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	dirs := strings.Fields(string(out))
	if len(dirs) != 2 {
		t.Fatalf("go env GOMODCACHE GOCACHE printed %q", out)
	}
	t.Setenv("GOMODCACHE", dirs[0])
	t.Setenv("GOCACHE", dirs[1])
}

func goPath(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	return path
}
