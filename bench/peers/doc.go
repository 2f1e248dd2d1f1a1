// Package peers runs loadgen's scenario on the systems users would pick instead of
// agentmux to answer their agents' questions: Temporal (its dev server, the temporal
// CLI built from its module, and a Go SDK worker: a session is a workflow, each request
// an Update a rule decides) and Restate (restate-server from npm and a service on its
// TypeScript SDK: a session is a virtual object, each request an awakeable a rule
// service resolves). Each peer is found, or built once and cached, started on loopback
// for its run and stopped after it; bench.RunPeer drives it with the same agents and
// arrival schedule as agentmux.
//
// It is a module of its own so that agentmux's module does not carry the peers' SDKs.
// cmd/peerload is what loadgen --peers runs.
package peers
