// Package actionlink makes and checks the signed links a notification carries so a
// person can act on a request waiting for them from wherever the notification reached
// them: approve, deny, or pick an option, as that person, until the request's deadline.
//
// A link is the console's /act/<notify>/<token>; the token is the action (request,
// person, value, expiry) in JSON, base64url, and its HMAC-SHA256 under a key only the
// nodes that notify and the console hold. Nothing in it is secret, and nothing in it
// can be changed: another request, person, value or expiry breaks the signature.
// Opening a link shows a confirmation page; only its form acts, so a link scanner that
// fetches every URL of a mail decides nothing. A request takes one answer, so the
// first link used is the only one that acts.
package actionlink
