package routines

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
)

// Group owns goroutines. Its zero value is not ready: use New.
type Group struct {
	ctx     context.Context
	cancel  context.CancelFunc
	running atomic.Int64

	mu       sync.Mutex // orders Go's Add before Stop's Wait
	stopping bool
	wg       sync.WaitGroup
}

// New returns a Group whose goroutines' context ends at Stop.
func New() *Group {
	ctx, cancel := context.WithCancel(context.Background())
	return &Group{ctx: ctx, cancel: cancel}
}

// Go runs f on a goroutine of the group with the group's context, unless Stop has
// begun; it reports whether it did.
func (g *Group) Go(f func(ctx context.Context)) bool {
	g.mu.Lock()
	if g.stopping {
		g.mu.Unlock()
		return false
	}
	g.wg.Add(1)
	g.running.Add(1)
	g.mu.Unlock()
	go func() {
		defer g.wg.Done()
		defer g.running.Add(-1)
		f(g.ctx)
	}()
	return true
}

// Stop refuses new goroutines, cancels the context of those running, and waits for them
// until ctx ends, when it says how many still run.
func (g *Group) Stop(ctx context.Context) error {
	g.mu.Lock()
	g.stopping = true
	g.mu.Unlock()
	g.cancel()
	done := make(chan struct{})
	go func() {
		g.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("routines: %d goroutines still running: %w", g.running.Load(), ctx.Err())
	}
}
