package actorio

import (
	"context"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/agentmux/agentmux/internal/routines"
)

// Mailbox is where an operation's report goes: an actor of a system.
type Mailbox struct {
	System *actor.ActorSystem
	PID    *actor.PID
}

// Self is the mailbox of the actor whose context c is.
func Self(c actor.Context) Mailbox { return Mailbox{System: c.ActorSystem(), PID: c.Self()} }

// Send sends msg to the mailbox; a nil msg sends nothing.
func (m Mailbox) Send(msg any) {
	if msg != nil {
		m.System.Root.Send(m.PID, msg)
	}
}

// Do runs op on a goroutine of g with a context that ends after timeout (none with 0),
// and sends what op returns to to. It reports whether it started op: a group that is
// stopping starts nothing, and to gets no report.
func Do(g *routines.Group, to Mailbox, timeout time.Duration, op func(ctx context.Context) any) bool {
	return g.Go(func(context.Context) {
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		if timeout > 0 {
			ctx, cancel = context.WithTimeout(ctx, timeout)
		}
		defer cancel()
		to.Send(op(ctx))
	})
}
