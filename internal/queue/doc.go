// Package queue provides the hand-off between an actor and the one goroutine that does
// its slow I/O: the actor pushes without ever blocking, the goroutine drains in batches,
// and a close lets what is already queued go out first. Offer skips the hand-off when
// the goroutine is idle and the actor can do the work without blocking, as a write to
// a pipe with room is.
package queue
