package gateway

import (
	"context"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/agentmux/agentmux/config"
)

// limits bound one connection's calls across the node's agents: how many start in a
// minute, and how many are under way at once. A call past them waits its turn.
type limits struct {
	rate    *rate.Limiter // nil: no rate
	slot    chan struct{} // nil: no bound on calls at once
	waiting atomic.Int64  // calls waiting for a slot
}

func newLimits(r *config.RateLimit) *limits {
	l := &limits{}
	if r == nil {
		return l
	}
	if r.RequestsPerMinute > 0 {
		l.rate = rate.NewLimiter(rate.Limit(float64(r.RequestsPerMinute)/60), max(r.Burst, 1))
	}
	if r.Concurrency > 0 {
		l.slot = make(chan struct{}, r.Concurrency)
	}
	return l
}

// wait waits for a call's turn, and returns what ends it (a slot given back) and how
// long it waited; an error when ctx ended first (the agent went).
func (l *limits) wait(ctx context.Context) (release func(), waited time.Duration, err error) {
	start := time.Now()
	if l.slot != nil {
		select {
		case l.slot <- struct{}{}:
		default:
			l.waiting.Add(1)
			select {
			case l.slot <- struct{}{}:
				l.waiting.Add(-1)
			case <-ctx.Done():
				l.waiting.Add(-1)
				return nil, time.Since(start), ctx.Err()
			}
		}
	}
	release = func() {
		if l.slot != nil {
			<-l.slot
		}
	}
	if l.rate != nil {
		if err := l.rate.Wait(ctx); err != nil {
			release()
			return nil, time.Since(start), err
		}
	}
	return release, time.Since(start), nil
}
