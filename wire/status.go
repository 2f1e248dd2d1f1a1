package wire

import "time"

// The ask protocol's status messages: a member of a supervisor's queue group sends them
// on an ask's reply subject, with no body, before its answer (see ask.Asker).
const (
	HeaderStatus = "Agentmux-Status" // on a status message; an answer has none
	HeaderMember = "Agentmux-Member" // the member (node) that sent it

	StatusAck      = "ack"      // the member has the ask and will decide it
	StatusAlive    = "alive"    // still deciding; sent every KeepAliveInterval
	StatusDeferred = "deferred" // a person answers (pending store); stop watching
	StatusRelease  = "release"  // the member lets go (it is stopping): ask another

	// KeepAliveInterval is how often a member says it is still deciding an ask.
	KeepAliveInterval = time.Second
)

// EventMark is the reply subject of every event and announcement a node publishes;
// nothing answers there. The server never sends a message with such a reply, so the
// answers a reader of the bus can have it send to an event subject (bus.CheckEvent) do
// not pass for events.
const EventMark = "agentmux.event"
