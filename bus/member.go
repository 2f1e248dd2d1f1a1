package bus

import (
	"time"

	"github.com/nats-io/nats.go"
)

// The ask protocol's status messages: a member of a supervisor's queue group sends them
// on an ask's reply subject, with no body, before its answer (see Asker).
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

// SendStatus sends one status message of the ask protocol to an ask's reply subject.
func SendStatus(nc *nats.Conn, reply, status, member string) error {
	return nc.PublishMsg(&nats.Msg{Subject: reply, Header: nats.Header{HeaderStatus: []string{status}, HeaderMember: []string{member}}})
}
