package node

import (
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/agentmux/agentmux/bus"
)

// serveQueue answers the requests on subjects in queue group queue (one node of the
// fleet takes each) with handle's reply, as JSON; what names them in the log.
func (n *Node) serveQueue(subjects, queue, what string, handle func(*nats.Msg) any) error {
	sub, err := n.Bus.Conn.QueueSubscribe(subjects, queue, func(m *nats.Msg) {
		if err := bus.CheckRequest(m, subjects); err != nil {
			n.log.Warn(what+" refused", "err", err)
			return
		}
		data, _ := json.Marshal(handle(m))
		if err := m.Respond(data); err != nil {
			n.log.Warn(what+" reply", "err", err)
		}
	})
	if err != nil {
		return fmt.Errorf("node: serve %s: %w", subjects, err)
	}
	n.control.subs = append(n.control.subs, sub)
	return nil
}
