// Package dispatch runs actors' mailboxes on long-lived goroutines.
//
// protoactor's default dispatcher starts a goroutine each time a mailbox has messages.
// That goroutine begins with a small stack, grows it by copying on the way down an
// agent's Receive (a NATS publish, a JSON check), and exits when the mailbox is empty,
// so every burst of an agent's messages pays for the growth again. A Pool's workers
// keep their grown stacks from one mailbox to the next. When every worker is busy, a
// mailbox gets a goroutine of its own, as with the default: Schedule never waits.
//
//	pool := dispatch.New(4*runtime.GOMAXPROCS(0), 300)
//	props := actor.PropsFromProducer(newActor, actor.WithDispatcher(pool))
//	…
//	system.Shutdown()
//	pool.Stop()
package dispatch
