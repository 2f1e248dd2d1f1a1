package node

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/internal/testdeps"
)

// TestPrometheusScrapesANode runs a real Prometheus server (PATH's, or built from its
// module on first use) against a node and asks it PromQL questions.
func TestPrometheusScrapesANode(t *testing.T) {
	bin := testdeps.Prometheus(t)
	f := start(t, simHost("w", "")+"[supervisors.s]\nstrategy = \"static\"\nanswers = { question = \"yes\" }\n[[routes]]\nsupervisor = \"s\"\n",
		func(o *Options) { o.MetricsAddr = "127.0.0.1:0" })
	for range 3 {
		f.run("w", script(send(`{"type":"question","id":"q1","question":"go?"}`), await("q1"), result))
	}

	dir := t.TempDir()
	cfg := fmt.Sprintf("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: agentmux\n    static_configs:\n      - targets: [%q]\n", f.n.MetricsAddr())
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	var logs syncWriter
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})

	query := func(q string) (float64, error) {
		resp, err := http.Get("http://" + addr + "/api/v1/query?query=" + url.QueryEscape(q))
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		var r struct {
			Status string
			Data   struct {
				Result []struct {
					Value [2]any
				}
			}
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			return 0, err
		}
		if r.Status != "success" || len(r.Data.Result) == 0 {
			return 0, fmt.Errorf("%s: no result yet (status %s)", q, r.Status)
		}
		s, _ := r.Data.Result[0].Value[1].(string)
		return strconv.ParseFloat(s, 64)
	}
	for q, want := range map[string]func(float64) bool{
		`up{job="agentmux"}`: func(v float64) bool { return v == 1 },
		`sum(agentmux_sessions_total{host="w",outcome="ok"})`:                                          func(v float64) bool { return v == 3 },
		`sum(agentmux_requests_total{type="question",outcome="answered"})`:                             func(v float64) bool { return v == 3 },
		`histogram_quantile(0.5, sum by (le) (agentmux_request_wait_seconds_bucket{type="question"}))`: func(v float64) bool { return v > 0 && v < 60 },
		`agentmux_nats_server_connections`:                                                             func(v float64) bool { return v >= 1 },
	} {
		proctest.Within(t, 30*time.Second, func() error {
			v, err := query(q)
			if err != nil {
				return fmt.Errorf("%v\nprometheus logs:\n%s", err, logs.String())
			}
			if !want(v) {
				return fmt.Errorf("%s = %v", q, v)
			}
			return nil
		})
	}
}

// syncWriter collects a subprocess's output for failure messages.
type syncWriter struct {
	mu sync.Mutex
	b  []byte
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b = append(w.b, p...)
	return len(p), nil
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.b)
}
