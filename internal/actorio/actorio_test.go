package actorio

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/agentmux/agentmux/internal/routines"
)

// TestDoReportsToTheActor: the operation runs off the actor with a context that ends
// at the timeout, and what it returns reaches the actor; a stopping group starts
// nothing.
func TestDoReportsToTheActor(t *testing.T) {
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	defer system.Shutdown()
	got := make(chan any, 4)
	pid := system.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(time.Duration); ok {
			got <- c.Message()
		}
	}))
	g := routines.New()
	to := Mailbox{System: system, PID: pid}
	if !Do(g, to, 50*time.Millisecond, func(ctx context.Context) any {
		<-ctx.Done() // the timeout ends it
		d, _ := ctx.Deadline()
		return time.Until(d)
	}) {
		t.Fatal("Do started nothing")
	}
	select {
	case v := <-got:
		if v.(time.Duration) > 0 {
			t.Fatalf("the operation's context ended %v before its deadline", v)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the actor got no report")
	}
	Do(g, to, 0, func(ctx context.Context) any {
		if _, ok := ctx.Deadline(); ok {
			return time.Duration(-1)
		}
		return nil // no report
	})
	if err := g.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if Do(g, to, 0, func(context.Context) any { return time.Second }) {
		t.Fatal("a stopping group started an operation")
	}
	select {
	case v := <-got:
		t.Fatalf("the actor got %v; want nothing more", v)
	case <-time.After(100 * time.Millisecond):
	}
}
