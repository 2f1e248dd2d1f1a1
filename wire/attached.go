package wire

// AttachedBucket is the KV bucket of open attached sessions: key <source>.<session>,
// value the name of the node that holds it, so that each request of a session reaches
// that node wherever it arrives.
const AttachedBucket = "agentmux_attached"
