package node

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/agentmux/agentmux/actors/agent"
	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/wire"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

func TestMetricsAfterAScriptedRun(t *testing.T) {
	f := start(t, simHost("w", "question_default = \"skip\"\nquestion_timeout = \"5s\"")+`
[supervisors.s]
strategy = "rule"
rules = [{ type = "question", match = "answer me", answer = "yes" }]
[supervisors.nobody]
strategy = "external"
[[routes]]
match = "ignored"
supervisor = "nobody"
[[routes]]
supervisor = "s"
`, func(o *Options) { o.MetricsAddr = "127.0.0.1:0" })
	base := "http://" + f.n.MetricsAddr()
	if code, body := get(t, base+"/healthz"); code != 200 || body != "ok\n" {
		t.Fatalf("/healthz = %d %q", code, body)
	}
	if code, body := get(t, base+"/readyz"); code != 200 || body != "ready\n" {
		t.Fatalf("/readyz = %d %q", code, body)
	}

	f.run("w", script(
		send(`{"type":"progress","message":"one"}`), send(`{"type":"progress","message":"two"}`),
		send(`{"type":"question","id":"q1","question":"answer me"}`), await("q1"),
		send(`{"type":"question","id":"q2","question":"ignored","timeout_ms":200}`), await("q2"),
		`{"raw":"{not json"}`, result))
	f.run("w", script(`{"error":"failed on purpose"}`))

	problems, err := testutil.GatherAndLint(f.n.Metrics.Registry)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}

	_, body := get(t, base+"/metrics")
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("exposition does not parse: %v", err)
	}
	value := func(name string, labels map[string]string) float64 {
		fam := families[name]
		if fam == nil {
			t.Fatalf("family %s missing", name)
		}
	next:
		for _, m := range fam.Metric {
			got := map[string]string{}
			for _, l := range m.Label {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount())
			}
		}
		return 0
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"agentmux_sessions_total", map[string]string{"host": "w", "outcome": "ok"}, 1},
		{"agentmux_sessions_total", map[string]string{"host": "w", "outcome": "error"}, 1},
		{"agentmux_messages_total", map[string]string{"host": "w", "type": "progress"}, 2},
		{"agentmux_requests_total", map[string]string{"host": "w", "type": "question", "outcome": "answered"}, 1},
		{"agentmux_requests_total", map[string]string{"host": "w", "type": "question", "outcome": "timed_out"}, 1},
		{"agentmux_frame_errors_total", map[string]string{"host": "w", "reason": "invalid_json"}, 1},
		{"agentmux_request_wait_seconds", map[string]string{"type": "question"}, 2},
		{"agentmux_agent_starts_total", map[string]string{"host": "w"}, 1},
		{"agentmux_sessions_active", map[string]string{"host": "w"}, 0},
		{"agentmux_answers_total", map[string]string{"host": "w", "decider": "rule"}, 1},
		{"agentmux_answers_total", map[string]string{"host": "w", "decider": "default"}, 1},
		{"agentmux_frame_bytes", map[string]string{"host": "w"}, 7},         // 6 lines, then the error line
		{"agentmux_stdin_write_seconds", map[string]string{"host": "w"}, 4}, // 2 prompts, 2 responses
	} {
		if got := value(c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v; want %v", c.name, c.labels, got, c.want)
		}
	}
	// No session ids in labels: every label value is bounded.
	for name, fam := range families {
		for _, m := range fam.Metric {
			for _, l := range m.Label {
				if strings.HasPrefix(l.GetValue(), "s-") {
					t.Errorf("%s has a session id in label %s", name, l.GetName())
				}
			}
		}
	}
}

func TestReadyzFailsWhenNATSIsGone(t *testing.T) {
	f := start(t, simHost("w", ""), func(o *Options) { o.MetricsAddr = "127.0.0.1:0" })
	f.n.Bus.Conn.Close()
	code, body := get(t, "http://"+f.n.MetricsAddr()+"/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "NATS connection is CLOSED") {
		t.Fatalf("/readyz = %d %q", code, body)
	}
}

// A node is ready once its heartbeat is in the nodes bucket, so whoever waits for
// /readyz finds it in `agentmux nodes`; one whose heartbeat is not written yet (the
// first failed) says so, and is ready once the next one is.
func TestReadyzWaitsForTheHeartbeat(t *testing.T) {
	f := start(t, simHost("w", ""), func(o *Options) { o.MetricsAddr = "127.0.0.1:0" })
	readyz := "http://" + f.n.MetricsAddr() + "/readyz"
	if code, _ := get(t, readyz); code != http.StatusOK {
		t.Fatalf("/readyz = %d once the node is up", code)
	}
	list, _, err := f.n.asking.nodes.List(context.Background())
	if err != nil || len(list) != 1 || list[0].Name != f.n.Name {
		t.Fatalf("the nodes bucket of a ready node: %v %v; want %s", list, err, f.n.Name)
	}
	f.n.pulse.listed.Store(false) // as if the first heartbeat had not been written
	if code, body := get(t, readyz); code != http.StatusServiceUnavailable || !strings.Contains(body, "starting (no heartbeat written yet)") {
		t.Fatalf("/readyz = %d %q before a heartbeat; want 503, starting", code, body)
	}
	proctest.Within(t, 3*wire.HeartbeatInterval, func() error {
		if code, body := get(t, readyz); code != http.StatusOK {
			return fmt.Errorf("/readyz = %d %q after the next heartbeat", code, body)
		}
		return nil
	})
}

// A draining node is not ready: /readyz says so, and task_intake drops to 0.
func TestReadyzFailsWhileDraining(t *testing.T) {
	f := start(t, simHost("w", ""), func(o *Options) { o.MetricsAddr = "127.0.0.1:0" })
	if v := testutil.ToFloat64(f.n.Metrics.TaskIntake.WithLabelValues("w")); v != 1 {
		t.Fatalf("task_intake = %v before the drain", v)
	}
	results := make(chan *agent.Result, 1)
	f.n.Submit("w", "", script(`{"sleep":"1s"}`, result), results)
	drained := make(chan error, 1)
	go func() { drained <- f.n.Drain(context.Background(), 10*time.Second, false) }()
	// /readyz turns the moment Drain is called; the router stops its consumers (and
	// sets task_intake) when it takes the drain message.
	proctest.Within(t, 5*time.Second, func() error {
		code, body := get(t, "http://"+f.n.MetricsAddr()+"/readyz")
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "draining") {
			return fmt.Errorf("/readyz = %d %q while draining", code, body)
		}
		if v := testutil.ToFloat64(f.n.Metrics.TaskIntake.WithLabelValues("w")); v != 0 {
			return fmt.Errorf("task_intake = %v while draining", v)
		}
		return nil
	})
	if res := <-results; !res.OK {
		t.Errorf("the running session did not finish within the grace: %+v", res)
	}
	if err := <-drained; err != nil {
		t.Fatal(err)
	}
}
