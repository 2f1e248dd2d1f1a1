package metrics

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestFamiliesLintClean(t *testing.T) {
	s := New()
	// Touch every vector so each family is exposed.
	s.SessionsActive.WithLabelValues("w").Set(1)
	s.Sessions.WithLabelValues("w", "ok").Inc()
	s.SessionDuration.WithLabelValues("w").Observe(1)
	s.Agents.WithLabelValues("w", "idle").Set(1)
	s.AgentStarts.WithLabelValues("w").Inc()
	s.AgentExits.WithLabelValues("w", "exit_ok").Inc()
	s.Messages.WithLabelValues("w", "progress").Inc()
	s.FrameErrors.WithLabelValues("w", "too_long").Inc()
	s.StderrLines.WithLabelValues("w", "published").Inc()
	s.Requests.WithLabelValues("w", "question", "answered").Inc()
	s.RequestWait.WithLabelValues("question").Observe(0.002)
	s.LateAnswers.WithLabelValues("w").Inc()
	s.StdinWrites.WithLabelValues("w", "ok").Inc()
	s.AskRequests.WithLabelValues("answered").Inc()
	s.Decisions.WithLabelValues("s", "decided").Inc()
	s.DecisionTime.WithLabelValues("s").Observe(0.001)
	s.Tasks.WithLabelValues("w", "ok").Inc()
	s.PublishErrors.WithLabelValues("event").Inc()
	s.WorkspaceBytes.WithLabelValues("w").Set(1)
	s.WorkspaceOver.WithLabelValues("w").Inc()
	s.WorkspaceConflicts.WithLabelValues("w").Inc()
	problems, err := testutil.GatherAndLint(s.Registry)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
	families, err := s.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range families {
		names[f.GetName()] = true
		if !strings.HasPrefix(f.GetName(), "agentmux_") && !strings.HasPrefix(f.GetName(), "go_") && !strings.HasPrefix(f.GetName(), "process_") {
			t.Errorf("family %s is outside the agentmux namespace", f.GetName())
		}
	}
	for _, want := range []string{"agentmux_build_info", "agentmux_request_wait_seconds", "go_goroutines", "process_cpu_seconds_total"} {
		if !names[want] {
			t.Errorf("family %s missing", want)
		}
	}
}

func TestServeHealthAndReadiness(t *testing.T) {
	var ready atomic.Bool
	srv, err := Serve("127.0.0.1:0", "", New(), func() error {
		if !ready.Load() {
			return errors.New("NATS connection is RECONNECTING")
		}
		return nil
	}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + srv.Addr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/healthz"); code != 200 || body != "ok\n" {
		t.Fatalf("/healthz = %d %q", code, body)
	}
	if code, body := get("/readyz"); code != 503 || !strings.Contains(body, "not ready: NATS connection is RECONNECTING") {
		t.Fatalf("/readyz while not ready = %d %q", code, body)
	}
	ready.Store(true)
	if code, _ := get("/readyz"); code != 200 {
		t.Fatalf("/readyz when ready = %d", code)
	}
	if code, body := get("/metrics"); code != 200 || !strings.Contains(body, "agentmux_build_info") {
		t.Fatalf("/metrics = %d", code)
	}
	srv.Close()
	srv.Close() // idempotent
	var none *Server
	none.Close() // nil-safe
}

func TestServeOnABusyAddressSaysWhatToDo(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = Serve(ln.Addr().String(), "", New(), func() error { return nil }, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "set [metrics] addr to a free address") {
		t.Fatalf("Serve on a busy address = %v", err)
	}
}

func TestMetricsBearerToken(t *testing.T) {
	srv, err := Serve("127.0.0.1:0", "s3cret", New(), func() error { return nil }, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	get := func(path, auth string) (int, http.Header, string) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+srv.Addr()+path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(b)
	}
	for _, auth := range []string{"", "Bearer wrong", "s3cret", "Basic czNjcmV0"} {
		code, h, body := get("/metrics", auth)
		if code != http.StatusUnauthorized || !strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer") || strings.Contains(body, "agentmux_build_info") {
			t.Errorf("/metrics with %q = %d %q", auth, code, body)
		}
	}
	if code, _, body := get("/metrics", "Bearer s3cret"); code != 200 || !strings.Contains(body, "agentmux_build_info") {
		t.Errorf("/metrics with the token = %d", code)
	}
	if code, _, _ := get("/healthz", ""); code != 200 {
		t.Errorf("/healthz without the token = %d; probes carry no token", code)
	}
	if code, _, _ := get("/readyz", ""); code != 200 {
		t.Errorf("/readyz without the token = %d", code)
	}
}

// TestBuildInfoSaysWhatRuns: agentmux_build_info carries the version, the revision and
// the Go version, so a fleet in a rolling upgrade shows which node runs what.
func TestBuildInfoSaysWhatRuns(t *testing.T) {
	m := New()
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	b := ReadBuild()
	for _, f := range fams {
		if f.GetName() != "agentmux_build_info" {
			continue
		}
		labels := map[string]string{}
		for _, l := range f.GetMetric()[0].GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["version"] != b.Version || labels["revision"] != b.Revision || labels["goversion"] != b.Go || b.Go == "" {
			t.Fatalf("build_info labels %v; want %+v", labels, b)
		}
		return
	}
	t.Fatal("no agentmux_build_info")
}

func TestVersionNamesTheRevision(t *testing.T) {
	for _, c := range []struct {
		b    Build
		want string
	}{
		{Build{Version: "v1.2.3", Revision: "1a2b3c4d5e6f7a8b", Go: "go1.26.0"}, "v1.2.3 (revision 1a2b3c4d5e6f7a8b, go1.26.0)"},
		{Build{Version: "(devel)", Revision: "1a2b3c4d5e6f7a8b", Modified: true, Time: "2026-11-26T12:00:00Z", Go: "go1.26.0"},
			"(devel) (revision 1a2b3c4d5e6f7a8b, modified, 2026-11-26T12:00:00Z, go1.26.0)"},
		{Build{Version: "(devel)"}, "(devel)"},
	} {
		if got := c.b.String(); got != c.want {
			t.Errorf("%+v: %q; want %q", c.b, got, c.want)
		}
	}
	for b, want := range map[Build]string{
		{Version: "v1.2.3", Revision: "1a2b3c4d5e6f7a8b"}:                  "v1.2.3",
		{Version: "(devel)", Revision: "1a2b3c4d5e6f7a8b", Modified: true}: "(devel)+1a2b3c4d5e6f-dirty",
		{Version: "(devel)"}: "(devel)",
	} {
		if got := b.Short(); got != want {
			t.Errorf("%+v.Short() = %q; want %q", b, got, want)
		}
	}
}
