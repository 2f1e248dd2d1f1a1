// Package node is agentmux's composition root: it builds the metrics server, the bus
// (embedded NATS or an external cluster), the actor system, the supervisors and the
// router, runs them, and stops them in order.
//
// Start order: metrics → bus → actor system → supervisors → router (pulls tasks last).
// Stop order: stop pulling tasks → interrupt sessions and answer their pending requests
// "cancelled" → stop ladder for every process → stop supervisors → flush audit → drain
// NATS → stop the embedded server → stop metrics.
//
//	n, err := node.Start(ctx, node.Options{Manifest: m, Log: log})
//	res, err := n.Run(ctx, "worker", "", "fix the build")
//	err = n.Stop(ctx)
//
// A Node's methods are safe for concurrent use; Stop is idempotent.
package node
