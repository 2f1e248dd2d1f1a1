package bus

import (
	"encoding/json"

	"github.com/agentmux/agentmux/wire"
	"github.com/nats-io/nats.go"
)

// bodyHeadroom is what a message's body leaves of the server's payload limit for its
// subject, reply and headers.
const bodyHeadroom = 1024

// BodyLimit is the longest body the server behind nc takes in one message, with room
// for its subject, reply and headers: events, asks and audit records are held to it.
func BodyLimit(nc *nats.Conn) int { return int(nc.MaxPayload()) - bodyHeadroom }

// PublishEvent publishes one event of a session on its subject. An event too big for
// the server goes out as {"truncated":true,"bytes":n} instead, so that the event is
// still seen and the session goes on.
func PublishEvent(nc *nats.Conn, host, session, typ string, data []byte) error {
	return PublishEventOn(nc, wire.EventSubject(host, session, typ), data)
}

// PublishEventOn is PublishEvent on a subject wire.EventSubject made.
func PublishEventOn(nc *nats.Conn, subject string, data []byte) error {
	if len(data) > BodyLimit(nc) {
		data, _ = json.Marshal(struct {
			Truncated bool `json:"truncated"`
			Bytes     int  `json:"bytes"`
		}{true, len(data)})
	}
	return nc.PublishRequest(subject, wire.EventMark, data)
}
