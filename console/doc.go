// Package console is the web console people answer from: requests waiting for a
// person, soonest deadline first, with their countdown, default and any model's
// suggestion; the sessions running and recently ended; and each session's events as
// they arrive with its audit trail.
//
// A Server is a NATS client like the CLI, and can run anywhere in the fleet. It keeps a
// view fed by the pending-request bucket and the session events, and streams it to each
// page with server-sent events; an answer goes through store.Answer, in the name of the
// person signed in, so it is recorded as human:<name>. The page is plain HTML, CSS and
// JavaScript embedded in the binary, under a strict Content-Security-Policy. Bound
// beyond loopback, or given a token, the console asks each person for the token and a
// name before showing anything.
package console
