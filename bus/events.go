package bus

import (
	"encoding/json"

	"github.com/nats-io/nats.go"
)

// eventHeadroom is what an event leaves of the server's payload limit for the
// protocol's own bytes.
const eventHeadroom = 1024

// EventMark is the reply subject of every event and announcement a node publishes;
// nothing answers there. The server never sends a message with such a reply, so the
// answers a reader of the bus can have it send to an event subject (bus.CheckEvent) do
// not pass for events.
const EventMark = "agentmux.event"

// PublishEvent publishes one event of a session on its subject. An event too big for
// the server goes out as {"truncated":true,"bytes":n} instead, so that the event is
// still seen and the session goes on.
func PublishEvent(nc *nats.Conn, host, session, typ string, data []byte) error {
	return PublishEventOn(nc, EventSubject(host, session, typ), data)
}

// PublishEventOn is PublishEvent on a subject EventSubject made.
func PublishEventOn(nc *nats.Conn, subject string, data []byte) error {
	if max := nc.MaxPayload(); int64(len(data)) > max-eventHeadroom {
		data, _ = json.Marshal(struct {
			Truncated bool `json:"truncated"`
			Bytes     int  `json:"bytes"`
		}{true, len(data)})
	}
	return nc.PublishRequest(subject, EventMark, data)
}
