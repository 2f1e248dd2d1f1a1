// Package notify tells people when something happens: each [notify.X] of the manifest
// sends the events it names (a request waiting for a person, a session ended, …) to a
// webhook, as a signed Standard Webhooks JSON message or as Slack-compatible text with
// a link to the request in the console.
//
// Every node runs each notifier in one queue group, so an event is sent by one node of
// the fleet. A delivery is tried again with backoff (internal/retry: doubling, with
// jitter, and at least as long as a Retry-After asks) until the request's deadline (or,
// for events without one, retry_for); the webhook-id stays the same across tries, so a
// receiver can drop repeats. Events are core NATS messages: a node that dies with an
// event in hand loses that notification, never an answer.
package notify
