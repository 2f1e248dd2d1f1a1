package routines

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestStopWaitsForEveryGoroutine: Stop returns once every goroutine started has
// returned, their context ended by it; none starts after.
func TestStopWaitsForEveryGoroutine(t *testing.T) {
	g := New()
	var ended atomic.Int32
	for range 50 {
		if !g.Go(func(ctx context.Context) {
			<-ctx.Done()
			ended.Add(1)
		}) {
			t.Fatal("Go refused before Stop")
		}
	}
	if err := g.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := ended.Load(); n != 50 {
		t.Fatalf("Stop returned with %d of 50 goroutines ended", n)
	}
	if g.Go(func(context.Context) { t.Error("a goroutine started after Stop") }) {
		t.Fatal("Go accepted work after Stop")
	}
}

// TestStopSaysWhatStillRuns: a goroutine that ignores its context holds Stop until
// Stop's own deadline, which names how many still run.
func TestStopSaysWhatStillRuns(t *testing.T) {
	g := New()
	release := make(chan struct{})
	g.Go(func(context.Context) { <-release })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := g.Stop(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || err.Error() != "routines: 1 goroutines still running: context deadline exceeded" {
		t.Fatalf("Stop = %v", err)
	}
	close(release)
	if err := g.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestGoRacesStop: goroutines started while Stop runs are either refused or waited for
// (under -race, Go's Add never races Stop's Wait).
func TestGoRacesStop(t *testing.T) {
	for range 100 {
		g := New()
		var accepted, ended atomic.Int32
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range 20 {
				if g.Go(func(context.Context) { ended.Add(1) }) {
					accepted.Add(1)
				}
			}
		}()
		if err := g.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		stopped := ended.Load()
		<-done
		if a := accepted.Load(); stopped != a || ended.Load() != a {
			t.Fatalf("%d accepted, %d ended when Stop returned, %d in all", a, stopped, ended.Load())
		}
	}
}
