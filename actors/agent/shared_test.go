package agent

import (
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentmux/agentmux/metrics"
	"github.com/agentmux/agentmux/protocol"
)

// The agents of a host count in the same series, from many goroutines at once, and
// what they count is what an SRE reads on /metrics.
func TestSharedCountsEveryAgentOfAHost(t *testing.T) {
	m := metrics.New()
	s := NewShared("w", m, slog.New(slog.NewTextHandler(io.Discard, nil)))
	const agents, each = 8, 50
	var wg sync.WaitGroup
	for range agents {
		wg.Go(func() {
			for i := range each {
				outcome := protocol.OutcomeAnswered
				if i%5 == 0 {
					outcome = protocol.OutcomeTimedOut
				}
				s.request(protocol.TypeQuestion, outcome, "rule", time.Millisecond)
				s.message(protocol.TypeProgress).Inc()
				s.agentsIn("idle").Inc()
				s.exit("exited").Inc()
			}
		})
	}
	wg.Wait()
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"requests answered", testutil.ToFloat64(m.Requests.WithLabelValues("w", "question", "answered")), agents * each * 4 / 5},
		{"requests timed out", testutil.ToFloat64(m.Requests.WithLabelValues("w", "question", "timed_out")), agents * each / 5},
		{"answers by rule", testutil.ToFloat64(m.Answers.WithLabelValues("w", "rule")), agents * each},
		{"progress messages", testutil.ToFloat64(m.Messages.WithLabelValues("w", "progress")), agents * each},
		{"idle agents", testutil.ToFloat64(m.Agents.WithLabelValues("w", "idle")), agents * each},
		{"exits", testutil.ToFloat64(m.AgentExits.WithLabelValues("w", "exited")), agents * each},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
	if n := testutil.CollectAndCount(m.RequestWait); n != 1 {
		t.Errorf("request wait series: %d, want 1 (question)", n)
	}
}
