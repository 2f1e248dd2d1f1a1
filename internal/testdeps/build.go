package testdeps

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// program is a program the tests drive that a Go module builds.
type program struct {
	name    string // the binary, as on PATH
	pkg     string // its main package
	version string // the module version it is built at
	tags    string // build tags, if any
}

// programs are the programs, pinned: Jaeger v2 (the OTLP receiver and query API the
// tracing test exports to), Prometheus 3.16 and its promtool, and kustomize.
func programs() map[string]program {
	return map[string]program{
		"jaeger":     {name: "jaeger", pkg: "github.com/jaegertracing/jaeger/cmd/jaeger", version: "v1.76.0"},
		"prometheus": {name: "prometheus", pkg: "github.com/prometheus/prometheus/cmd/prometheus", version: "v0.316.0"},
		"promtool":   {name: "promtool", pkg: "github.com/prometheus/prometheus/cmd/promtool", version: "v0.316.0"},
		"kustomize":  {name: "kustomize", pkg: "sigs.k8s.io/kustomize/kustomize/v5", version: "v5.8.2"},
	}
}

// Jaeger is Jaeger v2, which the tracing test exports to.
func Jaeger(t testing.TB) string { return build(t, programs()["jaeger"]) }

// Prometheus is the Prometheus server the scrape test runs.
func Prometheus(t testing.TB) string { return build(t, programs()["prometheus"]) }

// Promtool is Prometheus's promtool, which checks the alerting rules.
func Promtool(t testing.TB) string { return build(t, programs()["promtool"]) }

// Kustomize is the kustomize that renders deploy/kubernetes (kubectl's engine).
func Kustomize(t testing.TB) string { return build(t, programs()["kustomize"]) }

// Prepare finds or builds every program, one after another, saying what it does on
// logf: a run of the tests then builds none of them while tests run beside it.
func Prepare(logf func(format string, args ...any)) error {
	all := programs()
	for _, name := range []string{"jaeger", "prometheus", "promtool", "kustomize"} {
		p := all[name]
		path, err := ensure(p, logf)
		if err != nil {
			return err
		}
		logf("%s: %s", p.name, path)
	}
	return nil
}

// buildTimeout bounds one program's build: Jaeger's takes about 5 minutes on 2 cores.
const buildTimeout = 20 * time.Minute

// build returns p's path for test t, failing it if p cannot be built.
func build(t testing.TB, p program) string {
	t.Helper()
	path, err := ensure(p, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// ensure returns p's path: PATH's, else the cache's, built there first if need be.
func ensure(p program, logf func(format string, args ...any)) (string, error) {
	if path, err := exec.LookPath(p.name); err == nil {
		return path, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory to build %s into: %w; set HOME or XDG_CACHE_HOME", p.name, err)
	}
	dir := filepath.Join(cache, "agentmux", "tools")
	bin := filepath.Join(dir, p.name+"@"+p.version, p.name)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	unlock, err := lock(filepath.Join(dir, p.name+"@"+p.version+".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(bin); err == nil {
		return bin, nil // another process built it while this one waited
	}
	logf("building %s %s from %s into %s: once per machine, a few minutes", p.name, p.version, p.pkg, bin)
	start := time.Now()
	if err := p.build(dir, bin); err != nil {
		return "", fmt.Errorf("build %s: %w", p.name, err)
	}
	logf("built %s in %v", p.name, time.Since(start).Round(time.Second))
	return bin, nil
}

// build builds p into bin in a module of its own, which requires p's module at its
// version: `go install pkg@version` refuses modules with replace directives (Jaeger's).
func (p program) build(dir, bin string) error {
	mod, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(mod)
	tmp := filepath.Join(mod, p.name)
	args := []string{"build", "-trimpath", "-o", tmp}
	if p.tags != "" {
		args = append(args, "-tags", p.tags)
	}
	for _, cmd := range [][]string{
		{"mod", "init", "agentmux.test/tools"},
		{"get", "-tool", p.pkg + "@" + p.version},
		append(args, p.pkg),
	} {
		if err := goCmd(mod, cmd...); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return err
	}
	return os.Rename(tmp, bin)
}

// goCmd runs the go command in dir, apart from the environment's module settings.
func goCmd(dir string, args ...string) error {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off", "CGO_ENABLED=0")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second
	timer := time.AfterFunc(buildTimeout, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return nil
}

// lock takes an exclusive lock on path, waiting for another process that holds it.
func lock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
