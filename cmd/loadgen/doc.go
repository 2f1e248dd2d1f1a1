// Command loadgen measures agentmux: it runs scripted agents in open loop against a node
// (and, with --baselines, against B0, B1, B1a, B2, the wire's floor and a Node.js
// harness in the same run; with --peers, against Temporal and Restate) and reports
// latency percentiles from the intended send times: JSON on stdout, a table on stderr,
// a PNG of the percentile curves. `loadgen agent` is the scripted agent itself;
// `loadgen fleet` the scaling curve over fleets of node processes (`loadgen node`);
// `loadgen hooks` the round trip of Claude Code hooks through the console's API;
// `loadgen side-by-side` agentmux's requests per CPU-second over B1a's, the two run at
// the same time (`loadgen one` each), so that the machine's swings cancel.
package main
