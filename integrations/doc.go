// Package integrations serves what a notification carries back to the fleet: a
// person's action link (a page that confirms, then answers as that person until the
// request's deadline; the link is signed with its [notify.X]'s key) and a Slack
// button's press (signed by Slack, answered as the person the Slack user is mapped
// to). The console mounts it beside its page; each is its own credential.
//
//	in, err := integrations.New(integrations.Config{Manifest: m, Answer: answer, Pending: get, Refused: refused, Log: log})
//	in.Routes(mux)
//	defer in.Close()
package integrations
