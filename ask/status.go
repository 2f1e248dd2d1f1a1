package ask

import (
	"github.com/agentmux/agentmux/wire"
	"github.com/nats-io/nats.go"
)

// SendStatus sends one status message of the ask protocol to an ask's reply subject.
func SendStatus(nc *nats.Conn, reply, status, member string) error {
	return nc.PublishMsg(&nats.Msg{Subject: reply, Header: nats.Header{wire.HeaderStatus: []string{status}, wire.HeaderMember: []string{member}}})
}
