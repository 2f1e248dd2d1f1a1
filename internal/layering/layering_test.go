package layering

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/agentmux/agentmux/"

// leaves import nothing of agentmux but one another (protocol: internal/rawjson).
var leaves = []string{"internal/actorio", "internal/codecgen", "internal/codecgen/cmd", "internal/agenttest", "internal/dispatch", "internal/due", "internal/htmlpage", "internal/nodump", "internal/pipe", "internal/procenv", "internal/proctest", "internal/queue", "internal/strength",
	"internal/rawjson", "internal/retry", "internal/routines", "internal/sandbox", "internal/shim", "internal/testdeps", "internal/contexts", "permission", "protocol", "sim"}

// mayImport is, for each package, the packages of agentmux it may import beyond the
// leaves, lower layers first. The commands, the load generator and the tests' own
// packages may import anything.
var mayImport = map[string][]string{
	"wire":                {},
	"dialect":             {},
	"tracing":             {},
	"config":              {"wire"},
	"actionlink":          {"wire"},
	"bus":                 {"wire"},
	"ask":                 {"bus", "wire"},
	"store":               {"bus", "wire"},
	"metrics":             {"ask"},
	"notify":              {"actionlink", "bus", "config", "metrics", "wire"},
	"hook":                {"config", "dialect", "wire"},
	"attach":              {"config", "store", "wire"},
	"mcptools":            {"config", "hook", "wire"},
	"api":                 {"bus", "config", "hook", "mcptools", "store", "tracing", "wire"},
	"console":             {"api", "bus", "config", "integrations", "policy", "store", "wire"},
	"integrations":        {"actionlink", "config", "notify", "wire"},
	"decide":              {"config", "wire"},
	"gateway":             {"config", "metrics"},
	"policy":              {"config", "decide", "store", "wire"},
	"workspace":           {"config", "wire"},
	"actors/agent":        {"ask", "bus", "config", "dialect", "gateway", "metrics", "tracing", "wire", "workspace"},
	"actors/supervisor":   {"ask", "bus", "config", "decide", "metrics", "store", "tracing", "wire"},
	"actors/pipeline":     {"actors/agent", "config", "metrics", "store", "wire", "workspace"},
	"actors/router":       {"actors/agent", "actors/pipeline", "ask", "bus", "config", "metrics", "store", "tracing", "wire", "workspace"},
	"node":                {"actors/agent", "actors/router", "actors/supervisor", "ask", "attach", "bus", "config", "decide", "dialect", "gateway", "metrics", "notify", "store", "tracing", "wire", "workspace"},
	"internal/invariants": {"wire"},
	"internal/bustest":    {"ask", "bus", "store"},
}

// anything are the packages that may import every other, but for those of
// throughNode: the commands and the load generator run a node through its façade
// (node.Submit, node.Result), never its actors' messages.
var anything = []string{"bench", "cmd/loadgen", "cmd/runtime", "deploy", "examples", "internal/layering", "internal/testrun"}

// throughNode are the packages only node composes.
var throughNode = []string{"actors/"}

// neverReach are dependencies a package must not pull in, even indirectly: an agent's
// actor has no business with the model providers' SDKs; the subject API (wire) is for
// a supervisor written in Go to use without linking a NATS server or client; a
// decider decides, whatever carries the question.
var neverReach = map[string][]string{
	"actors/agent": {"github.com/openai/", "github.com/anthropics/"},
	"protocol":     {"github.com/nats-io/"},
	"dialect":      {"github.com/nats-io/"},
	"wire":         {"github.com/nats-io/nats-server/", "github.com/nats-io/nats.go", "github.com/nats-io/jwt"},
	"decide":       {"github.com/nats-io/nats-server/", "github.com/nats-io/nats.go"},
}

type pkg struct {
	Dir        string
	GoFiles    []string
	ImportPath string
	Imports    []string
	Deps       []string
}

func list(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps=false", "-json", module+"...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	for dec := json.NewDecoder(bytes.NewReader(out)); dec.More(); {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// TestLayers: every import of agentmux by agentmux is one its layer allows.
func TestLayers(t *testing.T) {
	pkgs := list(t)
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages; the test is not looking at the module", len(pkgs))
	}
	for _, p := range pkgs {
		name := strings.TrimPrefix(p.ImportPath, module)
		allowed, known := mayImport[name]
		switch {
		case slices.Contains(anything, name):
			for _, imp := range p.Imports {
				dep, _ := strings.CutPrefix(imp, module)
				if name != "internal/layering" && slices.ContainsFunc(throughNode, func(inner string) bool { return strings.HasPrefix(dep, inner) }) {
					t.Errorf("%s imports %s: use node's façade (node.Submit, node.Result, wire's payloads)", name, dep)
				}
			}
			continue
		case slices.Contains(leaves, name):
			allowed, known = leaves, true
		case !known:
			t.Errorf("%s is in no layer: add it to mayImport (or leaves) with what it may import", name)
			continue
		}
		for _, imp := range p.Imports {
			dep, ours := strings.CutPrefix(imp, module)
			if ours && !slices.Contains(allowed, dep) && !slices.Contains(leaves, dep) {
				t.Errorf("%s imports %s, which its layer may not (it may import %v and the leaves)", name, dep, allowed)
			}
		}
		for _, bad := range neverReach[name] {
			for _, d := range p.Deps {
				if strings.HasPrefix(d, bad) {
					t.Errorf("%s depends on %s, which it must never reach", name, d)
					break
				}
			}
		}
	}
}

// TestEveryPackageHasADocGo: docs/style.md's rule, held: a package's doc comment is in
// its doc.go.
func TestEveryPackageHasADocGo(t *testing.T) {
	for _, p := range list(t) {
		if len(p.GoFiles) > 0 && !slices.Contains(p.GoFiles, "doc.go") {
			t.Errorf("%s has no doc.go: put its package comment there", strings.TrimPrefix(p.ImportPath, module))
		}
	}
}

// releaseTags are the build tags agentmux's binaries are released with (the
// Dockerfile, the README's install line): grpcnotrace leaves out golang.org/x/net/trace,
// which the OTLP exporter's gRPC brings.
const releaseTags = "grpcnotrace"

// TestBinariesKeepDeadCodeElimination: no released binary links text/template. Its
// execution reaches reflect's MethodByName, which makes the linker keep every exported
// method of every type: the agentmux binary was 126 MB instead of 80, and an idle node
// held 84 MB resident instead of 63. The console writes its pages without it, and
// golang.org/x/net/trace (which renders with html/template, from gRPC) is left out by
// the release tags, which the Dockerfile must build with.
func TestBinariesKeepDeadCodeElimination(t *testing.T) {
	cmd := exec.Command("go", "list", "-tags", releaseTags, "-deps", "./cmd/...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, module+"cmd/runtime") {
		t.Fatalf("go list -deps ./cmd/... did not list cmd/runtime: %.200s", out)
	}
	for _, bad := range []string{"text/template", "golang.org/x/net/trace"} {
		if slices.Contains(deps, bad) {
			t.Errorf("a command links %s (see `go list -tags %s -deps ./cmd/...`; `go mod why -m` finds who): keep it out, or the binaries lose dead-code elimination", bad, releaseTags)
		}
	}
	dockerfile, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	builds := 0
	for _, line := range strings.Split(string(dockerfile), "\n") {
		if strings.Contains(line, "go build") {
			builds++
			if !strings.Contains(line, "-tags "+releaseTags) {
				t.Errorf("the Dockerfile builds without -tags %s: %s", releaseTags, strings.TrimSpace(line))
			}
		}
	}
	if builds == 0 {
		t.Error("the Dockerfile has no go build line: this test is not reading it")
	}
}
