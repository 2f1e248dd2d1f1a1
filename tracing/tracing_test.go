package tracing

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func TestEnabledByTheStandardVariables(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		on   bool
		fail string
	}{
		{env: nil},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, on: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, on: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, fail: "agentmux exports OTLP over HTTP"},
	} {
		on, err := Enabled(func(k string) string { return tc.env[k] })
		if on != tc.on || (err == nil) != (tc.fail == "") || err != nil && !strings.Contains(err.Error(), tc.fail) {
			t.Errorf("%v: on %v, %v; want on %v, error %q", tc.env, on, err, tc.on, tc.fail)
		}
	}
}

// A span's context crosses the bus in NATS headers: the span started from them on the
// other side is its child, in the same trace.
func TestContextCrossesInHeaders(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	p := New(rec, "agentmux", "node-a")
	ctx, parent := p.Tracer().Start(context.Background(), "request")
	h := Header(ctx)
	if tp, _ := Context(ctx); !strings.HasPrefix(h.Get("traceparent"), "00-"+parent.SpanContext().TraceID().String()+"-") || tp != h.Get("traceparent") {
		t.Fatalf("headers %v", h)
	}
	_, child := p.Tracer().Start(FromHeader(context.Background(), h), "decide")
	child.End()
	parent.End()
	spans := rec.Ended()
	if len(spans) != 2 || spans[0].Parent().SpanID() != parent.SpanContext().SpanID() || spans[0].SpanContext().TraceID() != parent.SpanContext().TraceID() {
		t.Fatalf("the span across the bus is not the request's child: %+v", spans)
	}
	off, _ := Off().Tracer().Start(context.Background(), "x")
	if Header(context.Background()) != nil || Header(off) != nil || Off().On() {
		t.Error("headers without a span that is recorded")
	}
}

// A log line written with a span's context carries its trace and span ids; one without
// carries none.
func TestLogLinesJoinTheTrace(t *testing.T) {
	var out strings.Builder
	log := slog.New(LogHandler(slog.NewTextHandler(&out, nil))).With("node", "a")
	ctx, span := New(tracetest.NewSpanRecorder(), "agentmux", "a").Tracer().Start(context.Background(), "session")
	log.InfoContext(ctx, "session paused")
	log.Info("no session")
	span.End()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	sc := span.SpanContext()
	if len(lines) != 2 || !strings.Contains(lines[0], "trace_id="+sc.TraceID().String()+" span_id="+sc.SpanID().String()) ||
		!strings.Contains(lines[0], "node=a") || strings.Contains(lines[1], "trace_id") {
		t.Fatalf("log lines:\n%s", out.String())
	}
}
