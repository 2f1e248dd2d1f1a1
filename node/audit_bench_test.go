package node

import (
	"log/slog"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/agentmux/agentmux/internal/bustest"
	"github.com/agentmux/agentmux/metrics"
	"github.com/agentmux/agentmux/wire"
)

// BenchmarkAuditPaced: answer records written to the audit stream of an embedded server
// as a busy node writes them, one a millisecond, not back to back; cpu-ns/op is the
// process's CPU (auditor, server, acknowledgements) per record. "ticks" is the pacing
// alone: the audit's cost per record is the difference (bench/RESULTS.md, "What limits
// agentmux now").
func BenchmarkAuditPaced(b *testing.B) {
	bs := bustest.Open(b, "audit-bench", slog.New(slog.DiscardHandler))
	for _, c := range []struct {
		name    string
		records bool
	}{{"ticks", false}, {"records", true}} {
		b.Run(c.name, func(b *testing.B) {
			a, err := newAuditor(bs.Conn, metrics.New(), slog.New(slog.DiscardHandler), auditHold)
			if err != nil {
				b.Fatal(err)
			}
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
			session := strconv.FormatInt(time.Now().UnixNano(), 36)
			before := processCPU()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				<-tick.C
				if !c.records {
					continue
				}
				s := session + strconv.Itoa(i/10) // ten records a session, as loadgen's
				a.record(wire.AuditID(s, 1, "q"+strconv.Itoa(i)+".answer"), &wire.AuditRecord{Kind: "answer", Time: time.Now().UnixMilli(),
					Host: "h", Session: s, Request: "q" + strconv.Itoa(i), Type: "question", Text: "Which one of these?", Decider: "static:fast"})
			}
			a.close(time.Minute)
			b.StopTimer()
			b.ReportMetric(float64(processCPU()-before)/float64(b.N), "cpu-ns/op")
		})
	}
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
