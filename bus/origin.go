package bus

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agentmux/agentmux/wire"
	"github.com/nats-io/nats.go"
)

// ErrNotPublished marks a message a handler refused because no client published it on
// the handler's subject.
var ErrNotPublished = errors.New("bus: not a message a client published here")

// Headers the NATS server itself sets. A client cannot make the server deliver a message
// without one of them, or without a reply subject of its own, except by publishing it.
const (
	headerStatus = "Status"      // a status message: heartbeat, flow control, 503, 204 EOB
	headerStream = "Nats-Stream" // a JetStream direct get's answer
)

// Every handler on the bus acts on what a client published on its subject. Four other
// kinds of message can arrive on the same subject, and a reader of the bus can aim each
// of them there, because the server never checks who may receive what it sends:
//
//   - a push consumer's delivery (the consumer's deliver_subject): its subject is the
//     stream's, its reply $JS.ACK.…;
//   - that consumer's heartbeats and flow control: a Status header, or a $JS.FC.… reply;
//   - a JetStream direct get's answer, sent to any reply subject: a Nats-Stream header,
//     no reply;
//   - any other answer of the JetStream API, or of a node, to a request whose reply
//     subject was set to the handler's: no reply.
//
// CheckRequest and CheckEvent tell them apart from what a client published.

// CheckRequest returns nil when m is a request a client published on a subject pattern
// matches: a control request, an ask, a person's answer. It returns an error wrapping
// ErrNotPublished, saying what m was instead, for anything else.
func CheckRequest(m *nats.Msg, pattern string) error {
	if err := checkEnvelope(m, pattern); err != nil {
		return err
	}
	switch {
	case m.Reply == "":
		return fmt.Errorf("%w: %s has no reply subject, so it is an answer sent there, not a request", ErrNotPublished, m.Subject)
	case serverReply(m.Reply):
		return fmt.Errorf("%w: %s came with reply %s, so JetStream delivered it", ErrNotPublished, m.Subject, m.Reply)
	}
	return nil
}

// CheckEvent returns nil when m is an event or announcement a node published on a
// subject pattern matches (its reply is EventMark), and an error wrapping
// ErrNotPublished for anything else.
func CheckEvent(m *nats.Msg, pattern string) error {
	if err := checkEnvelope(m, pattern); err != nil {
		return err
	}
	if m.Reply != wire.EventMark {
		return fmt.Errorf("%w: %s came with reply %q, and a node's events come with %s", ErrNotPublished, m.Subject, m.Reply, wire.EventMark)
	}
	return nil
}

// CheckReply returns nil when m may be an answer to a request of this connection, on a
// reply subject pattern matches: a supervisor's reply or status, or the server's "no
// responders". A stream's message delivered there is refused.
func CheckReply(m *nats.Msg, pattern string) error {
	if !subjectMatches(pattern, m.Subject) {
		return fmt.Errorf("%w: its subject %s is a stream's, not %s", ErrNotPublished, m.Subject, pattern)
	}
	if m.Header.Get(headerStream) != "" || serverReply(m.Reply) {
		return fmt.Errorf("%w: %s is a message of stream %s", ErrNotPublished, m.Subject, m.Header.Get(headerStream))
	}
	return nil
}

// checkEnvelope refuses what the server made: a subject the handler did not subscribe
// to (a stream's, kept by a push delivery), a status message, a direct get's answer.
func checkEnvelope(m *nats.Msg, pattern string) error {
	switch {
	case !subjectMatches(pattern, m.Subject):
		return fmt.Errorf("%w: its subject %s is a stream's, delivered to %s", ErrNotPublished, m.Subject, pattern)
	case m.Header.Get(headerStatus) != "":
		return fmt.Errorf("%w: %s is a status message (%s %s) of the server", ErrNotPublished, m.Subject,
			m.Header.Get(headerStatus), m.Header.Get("Description"))
	case m.Header.Get(headerStream) != "":
		return fmt.Errorf("%w: %s is an answer of stream %s sent there", ErrNotPublished, m.Subject, m.Header.Get(headerStream))
	}
	return nil
}

// serverReply reports whether reply is one the server gives the messages it sends:
// JetStream's acknowledgements and flow control, or the system account's.
func serverReply(reply string) bool {
	return strings.HasPrefix(reply, "$JS.") || strings.HasPrefix(reply, "$SYS.")
}
