// Package queue provides the hand-off between an actor and the one goroutine that does
// its slow I/O: the actor pushes without ever blocking, the goroutine drains in batches,
// and a close lets what is already queued go out first.
package queue
