package decide

import (
	"time"

	"github.com/agentmux/agentmux/wire"
)

// RequestOf is the request an ask carries, answered on replyTo: the one conversion from
// the wire to the strategies. Its deadline is on this machine's clock: the ask's time
// left from when it arrived (Ask.DeadlineFrom).
func RequestOf(ask *wire.Ask, replyTo string, arrived time.Time) *Request {
	return &Request{Host: ask.Host, Session: ask.Session, Type: ask.Type, ID: ask.ID, Text: ask.Text,
		Request: ask.Request, Default: ask.Default, ReplyTo: replyTo, PostProcess: ask.PostProcess,
		Node: ask.Node, Attempt: ask.Attempt, Deadline: ask.DeadlineFrom(arrived), Conflicts: ask.Conflicts}
}

// Reply is the decision as the asker reads it: the one conversion from the strategies
// to the wire. A request nobody took (Pass, with no escalation or fallback) gets the
// host's default. A deferred decision has no reply: a person's answer comes later.
func (d Decision) Reply() *wire.Reply {
	r := &wire.Reply{Decider: d.Decider, Reason: d.Reason, Scope: d.Scope}
	switch d.Verdict {
	case Answer:
		r.Value = d.Value
	case UseDefault, Pass:
		r.Kind = wire.ReplyDefault
	case Decline:
		r.Kind = wire.ReplyCancelled
	}
	return r
}
