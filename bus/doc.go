// Package bus connects agentmux to NATS: it runs an embedded server (alone or one of a
// cluster) or connects to an external server or cluster, with the identities, roles and
// permissions of the bus (auth.go), and checks that a message reaching a handler is one
// a client published there (origin.go). It declares nothing: package store declares
// the streams and buckets, and package ask sends the asks.
//
// A Bus holds one connection for the whole process (no subscription per session). Its
// methods are safe for concurrent use; Close is idempotent. A StreamPublisher
// publishes a node's audit records over one reply subscription, each published again
// under its id until the stream acknowledges it.
package bus
