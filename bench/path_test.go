package bench

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/agentmux/agentmux/node"
	"github.com/agentmux/agentmux/sim"
)

// The whole paths through a node, as loadgen drives them, as Go benchmarks: a node with
// in-process agents, its embedded server, a static supervisor, events and the audit on
// JetStream. One op is one request (or progress line); cpu-ns/op is the process's CPU
// (node, server and agents) per op, and allocs/op counts every allocation the process
// made meanwhile. Compare runs with benchstat.

// BenchmarkRequestPath: questions and approvals from an agent's stdout to the answer on
// its stdin, each asked of a supervisor over NATS, audited twice and published as
// events; sessions of 200 requests sent at once, 8 sessions at a time.
func BenchmarkRequestPath(b *testing.B) {
	benchPath(b, func(n int) *sim.Load { return &sim.Load{Questions: n - n/4, Approvals: n / 4} })
}

// BenchmarkProgressPath: progress lines, framed, decoded, and published as events, back
// to back; sessions of 200 lines, 8 at a time.
func BenchmarkProgressPath(b *testing.B) {
	benchPath(b, func(n int) *sim.Load { return &sim.Load{Progress: n} })
}

func benchPath(b *testing.B, plan func(n int) *sim.Load) {
	const perSession, parallel = 200, 8
	c := Defaults()
	c.Sessions = parallel
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	n, err := c.startNode(ctx, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	defer stopNodes(n)
	results := make(chan *node.Result, parallel)
	run := func(ops int) {
		running := 0
		for sent := 0; sent < ops || running > 0; {
			if sent < ops && running < parallel {
				n.Submit(loadHost, "", plan(min(perSession, ops-sent)).Prompt(), results)
				sent += perSession
				running++
				continue
			}
			r := <-results
			running--
			if !r.OK {
				b.Fatalf("session failed: %s", r.Error)
			}
			var p struct{ Load *sim.LoadReport }
			if err := json.Unmarshal(r.Payload, &p); err != nil || p.Load == nil || p.Load.Missing > 0 {
				b.Fatalf("session result %.300s", r.Payload)
			}
		}
	}
	run(parallel * perSession) // warm up: the processes, the streams, the caches
	b.ReportAllocs()
	before := readUsage()
	b.ResetTimer()
	run(b.N)
	b.StopTimer()
	b.ReportMetric(readUsage().since(before).cpu*1e9/float64(b.N), "cpu-ns/op")
}
