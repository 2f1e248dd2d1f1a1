package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/internal/testdeps"
	"github.com/agentmux/agentmux/metrics"
)

// promtool is Prometheus's own checker (PATH's, or built from its module on first use).
func promtool(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(testdeps.Promtool(t), args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestPrometheusRules(t *testing.T) {
	out := promtool(t, "prometheus", "check", "rules", "agentmux.rules.yml")
	if !strings.Contains(out, "SUCCESS") {
		t.Fatalf("promtool check rules:\n%s", out)
	}
	out = promtool(t, "prometheus", "test", "rules", "agentmux.rules.test.yml")
	if !strings.Contains(out, "SUCCESS") {
		t.Fatalf("promtool test rules:\n%s", out)
	}
	// Every alert has a unit test that fires it, and a runbook entry.
	rules := read(t, "prometheus/agentmux.rules.yml")
	tests := read(t, "prometheus/agentmux.rules.test.yml")
	runbook := read(t, "../docs/operations.md")
	for _, m := range regexp.MustCompile(`(?m)^\s+- alert: (\w+)`).FindAllStringSubmatch(rules, -1) {
		alert := m[1]
		if !regexp.MustCompile(`alertname: ` + alert + `\s+exp_alerts:\s+- exp_labels`).MatchString(tests) {
			t.Errorf("alert %s has no unit test that expects it to fire", alert)
		}
		if !strings.Contains(runbook, "### "+alert) {
			t.Errorf("alert %s has no entry in docs/operations.md (### %s)", alert, alert)
		}
	}
}

// dashboard is the part of the Grafana dashboard the tests read.
type dashboard struct {
	UID    string `json:"uid"`
	Panels []struct {
		ID      int    `json:"id"`
		Title   string `json:"title"`
		Type    string `json:"type"`
		GridPos struct{ H, W, X, Y int }
		Targets []struct {
			RefID string `json:"refId"`
			Expr  string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// TestDashboard: the dashboard decodes, its panels are laid out and have queries, and
// every query is PromQL that Prometheus parses (promtool checks them as recording rules,
// with Grafana's variables filled in).
func TestDashboard(t *testing.T) {
	var d dashboard
	if err := json.Unmarshal([]byte(read(t, "grafana/agentmux.json")), &d); err != nil {
		t.Fatalf("grafana/agentmux.json: %v", err)
	}
	if d.UID != "agentmux" || len(d.Panels) < 10 {
		t.Fatalf("dashboard %q with %d panels", d.UID, len(d.Panels))
	}
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	ids := map[int]bool{}
	fill := strings.NewReplacer("$__rate_interval", "5m", "$instance", ".*", "$host", ".*")
	for _, p := range d.Panels {
		if ids[p.ID] || p.GridPos.W == 0 || p.GridPos.H == 0 || len(p.Targets) == 0 {
			t.Errorf("panel %d %q: a unique id, a size and queries, please", p.ID, p.Title)
		}
		ids[p.ID] = true
		for _, q := range p.Targets {
			if strings.TrimSpace(q.Expr) == "" {
				t.Errorf("panel %q query %s is empty", p.Title, q.RefID)
			}
			expr, _ := json.Marshal(fill.Replace(q.Expr))
			fmt.Fprintf(&rules, "      - record: dashboard:panel%d_%s\n        expr: %s\n", p.ID, q.RefID, expr)
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dashboard.rules.yml"), []byte(rules.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	promtool(t, dir, "check", "rules", "dashboard.rules.yml")
}

// TestEveryNamedMetricIsExported: each agentmux metric the rules, their tests, the
// dashboard and docs/operations.md name is one a node exports, and docs/metrics.md
// documents every one a node exports.
func TestEveryNamedMetricIsExported(t *testing.T) {
	m := metrics.New()
	m.WatchServer(func() metrics.ServerStats { return metrics.ServerStats{} })
	exported := map[string]metrics.Family{}
	for _, f := range m.Families() {
		exported[f.Name] = f
	}
	name := regexp.MustCompile(`agentmux_[a-z0-9_]+`)
	for _, file := range []string{"prometheus/agentmux.rules.yml", "prometheus/agentmux.rules.test.yml", "grafana/agentmux.json", "../docs/operations.md"} {
		for _, n := range slices.Compact(name.FindAllString(read(t, file), -1)) {
			base := n
			for _, suffix := range []string{"_bucket", "_count", "_sum"} {
				if b, ok := strings.CutSuffix(n, suffix); ok && exported[b].Type == "histogram" {
					base = b
				}
			}
			if _, ok := exported[base]; !ok {
				t.Errorf("%s names %s, which no node exports", file, n)
			}
		}
	}
	doc := read(t, "../docs/metrics.md")
	for n := range exported {
		if !strings.Contains(doc, "`"+n+"`") {
			t.Errorf("docs/metrics.md does not document %s", n)
		}
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSystemdUnit: systemd-analyze verify takes the unit without a word (the binary
// stands in for /usr/local/bin/agentmux), it runs as its own user with the usual
// hardening, and it gives the drain its grace before anything is killed.
func TestSystemdUnit(t *testing.T) {
	analyze := testdeps.System(t, "systemd-analyze", "Debian's systemd")
	unit := read(t, "systemd/agentmux.service")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "agentmux.service")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(unit, "/usr/local/bin/agentmux", exe)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	for _, want := range []string{"User=agentmux", "NoNewPrivileges=yes", "ProtectSystem=strict", "ProtectHome=yes", "PrivateTmp=yes",
		"KillMode=mixed", "Delegate=yes", "Restart=on-failure", "StateDirectory=agentmux"} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(want) + `$`).MatchString(unit) {
			t.Errorf("the unit lacks %s", want)
		}
	}
	if !regexp.MustCompile(`(?m)^ExecReload=/bin/kill -HUP \$MAINPID$`).MatchString(unit) {
		t.Error("the unit's reload must send the node SIGHUP, which reloads its manifest in place; any other signal stops it")
	}
	grace := regexp.MustCompile(`--grace (\d+)m`).FindStringSubmatch(unit)
	stop := regexp.MustCompile(`(?m)^TimeoutStopSec=(\d+)min$`).FindStringSubmatch(unit)
	if grace == nil || stop == nil || atoi(stop[1]) <= atoi(grace[1]) {
		t.Errorf("TimeoutStopSec %v must outlast the drain's --grace %v, or systemd kills the agents mid-drain", stop, grace)
	}
}
