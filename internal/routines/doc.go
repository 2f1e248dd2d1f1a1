// Package routines gives goroutines an owner, as nats-server's startGoRoutine does for
// its server: Go starts one unless the owner is stopping, and Stop refuses new ones,
// cancels the context they were given, and waits for every one it started.
//
//	g := routines.New()
//	g.Go(func(ctx context.Context) { ... })
//	err := g.Stop(stopCtx) // nil once all have returned
//
// A node owns one Group for the goroutines its actors start off the actor (decisions,
// keep-alives, task acknowledgements, the router's pullers and ticker, store I/O), and
// stops it after the actors, so none outlives the node and none starts after its Stop.
package routines
