// Package actorio does an actor's blocking work off the actor: Do runs an operation on
// a goroutine a routines.Group owns, bounded by a timeout, and sends what it returns to
// the actor as a message. Receive never waits on I/O, and the goroutine has an owner
// that a node stops after its actors.
//
//	actorio.Do(group, actorio.Self(c), storeTimeout, func(ctx context.Context) any {
//		run, rev, err := store.Get(ctx, id)
//		return &loaded{run: run, rev: rev, err: err}
//	})
package actorio
