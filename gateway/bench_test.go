package gateway

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/metrics"
)

// streamEvents is a streamed answer of Anthropic's shape: its start, 20 text deltas of
// about 100 bytes each, its end with its usage.
var streamEvents = func() string {
	var b strings.Builder
	b.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":100,\"output_tokens\":1}}}\n\n")
	for range 20 {
		b.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"" + strings.Repeat("word ", 20) + "\"}}\n\n")
	}
	b.WriteString("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":20}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	return b.String()
}()

// eventGap is the time between a streamed answer's events: 40 a second, as a model
// streams a few tokens an event.
const eventGap = 25 * time.Millisecond

// BenchmarkGatewayOverhead measures what the gateway adds to streamed calls, with 200
// agents streaming at once from a provider that sends an answer's 22 events eventGap
// apart, as a model streams: the same calls go straight to the provider, then through
// the gateway, and the differences are the gateway's. It reports the p50 and p99 added
// to the first event and to the whole answer, the CPU time added per call, and the
// memory and goroutines of each stream held open through it.
//
//	go test -run '^$' -bench BenchmarkGatewayOverhead -benchtime 4000x ./gateway
func BenchmarkGatewayOverhead(b *testing.B) {
	const agents = 200
	var release chan struct{} // non-nil: answers are held open until it is closed
	var releaseMu sync.Mutex
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		releaseMu.Lock()
		hold := release
		releaseMu.Unlock()
		for i, event := range strings.SplitAfter(streamEvents, "\n\n") {
			if i > 0 && event != "" {
				time.Sleep(eventGap) // the model's pace
			}
			_, _ = io.WriteString(w, event)
			w.(http.Flusher).Flush()
			if hold != nil {
				<-hold
				return
			}
		}
	}))
	defer provider.Close()
	g, err := New(Config{Connections: map[string]*config.Connection{"c": {Name: "c", Provider: config.ProviderAnthropic, BaseURL: provider.URL}},
		Transport: &http.Transport{MaxIdleConnsPerHost: agents}, Metrics: metrics.New(), Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	if err := g.Start("127.0.0.1:0"); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = g.Close(context.Background()) }()
	var passes []*Pass
	for i := range agents {
		p, err := g.Issue("c", nil)
		if err != nil {
			b.Fatal(err)
		}
		p.Bind(fmt.Sprintf("s-%d", i), nil)
		passes = append(passes, p)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: agents}}
	defer client.CloseIdleConnections()
	body := `{"model":"claude-sonnet-4-5","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"` + strings.Repeat("context ", 1000) + `"}]}`
	call := func(url, token string) (first, whole time.Duration, ok bool) {
		req, _ := http.NewRequest("POST", url, strings.NewReader(body))
		req.Header.Set("X-Api-Key", token)
		req.Header.Set("Content-Type", "application/json")
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			b.Error(err)
			return 0, 0, false
		}
		defer resp.Body.Close()
		buf := make([]byte, 4096)
		if _, err := resp.Body.Read(buf); err != nil && err != io.EOF {
			b.Error(err)
			return 0, 0, false
		}
		first = time.Since(start)
		_, _ = io.Copy(io.Discard, resp.Body)
		return first, time.Since(start), resp.StatusCode == http.StatusOK
	}
	run := func(url func(i int) string, token func(i int) string) (first, whole *hdrhistogram.Histogram, cpu time.Duration) {
		first, whole = hdrhistogram.New(1, int64(time.Minute/time.Microsecond), 3), hdrhistogram.New(1, int64(time.Minute/time.Microsecond), 3)
		var mu sync.Mutex
		var wg sync.WaitGroup
		per := max(b.N/agents, 1)
		before := cpuTime()
		for i := range agents {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range per {
					f, w, ok := call(url(i), token(i))
					if !ok {
						b.Errorf("a call through %s failed", url(i))
						return
					}
					mu.Lock()
					_ = first.RecordValue(f.Microseconds())
					_ = whole.RecordValue(w.Microseconds())
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		return first, whole, (cpuTime() - before) / time.Duration(per*agents)
	}
	b.ResetTimer()
	directFirst, direct, directCPU := run(func(int) string { return provider.URL + "/v1/messages" }, func(int) string { return "sk-direct" })
	throughFirst, through, throughCPU := run(func(int) string { return g.URL() + "/c/v1/messages" }, func(i int) string { return passes[i].Token() })
	b.StopTimer()
	added := func(a, d *hdrhistogram.Histogram, q float64) float64 {
		return float64(a.ValueAtQuantile(q) - d.ValueAtQuantile(q))
	}
	b.ReportMetric(added(throughFirst, directFirst, 50), "first-p50-added-µs")
	b.ReportMetric(added(throughFirst, directFirst, 99), "first-p99-added-µs")
	b.ReportMetric(added(through, direct, 50), "whole-p50-added-µs")
	b.ReportMetric(added(through, direct, 99), "whole-p99-added-µs")
	b.ReportMetric(float64((throughCPU - directCPU).Microseconds()), "cpu-added-µs/call")
	b.ReportMetric(float64(directCPU.Microseconds()), "cpu-direct-µs/call")

	// Streams held open through the gateway: the provider holds each after its first
	// event.
	releaseMu.Lock()
	release = make(chan struct{})
	releaseMu.Unlock()
	before := heapAndGoroutines()
	var open sync.WaitGroup
	started := make(chan struct{}, agents)
	for i := range agents {
		open.Add(1)
		go func() {
			defer open.Done()
			req, _ := http.NewRequest("POST", g.URL()+"/c/v1/messages", strings.NewReader(body))
			req.Header.Set("X-Api-Key", passes[i].Token())
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				started <- struct{}{}
				return
			}
			_, _ = resp.Body.Read(make([]byte, 16))
			started <- struct{}{}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}()
	}
	for range agents {
		<-started
	}
	after := heapAndGoroutines()
	close(release)
	open.Wait()
	// What a stream holds on both sides of the gateway, less the agent's own side.
	b.ReportMetric(float64(after.heap-before.heap)/agents, "B/open-stream")
	b.ReportMetric(float64(after.goroutines-before.goroutines)/agents, "goroutines/open-stream")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type footprint struct{ heap, goroutines int64 }

func heapAndGoroutines() footprint {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return footprint{heap: int64(m.HeapInuse), goroutines: int64(runtime.NumGoroutine())}
}
