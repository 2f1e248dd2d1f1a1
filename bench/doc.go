// Package bench measures agentmux: Go benchmarks of the hot paths (framing, decoding,
// routing, answer encoding) and the load generator behind cmd/loadgen, which runs
// scripted agents in open loop against a node and against baselines (B0 raw pipes, B1
// pipes plus the same NATS traffic, B1a B1 writing agentmux's audit, B2 bare NATS
// requests, and a Node.js harness) and peers (Temporal and Restate, each a Peer of the
// bench/peers module, run by its cmd/peerload) in the same run, and reports latency
// percentiles from the intended send times; and the hooks path (RunHooks).
package bench
