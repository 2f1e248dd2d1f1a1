package agent

import (
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/protocol"
)

// stream is the short way a running session's progress, log and heartbeat lines take
// to NATS: they carry no decision, so the stdout reader publishes them itself, without
// a hop through the actor. The actor opens it when a session starts and closes it when
// the session ends; while it is closed every line goes through the actor. Lines keep
// the order the agent wrote them in: the reader publishes a line itself only when the
// actor has taken every message the reader sent it before.
type stream struct {
	sink    atomic.Pointer[streamSink]
	untaken atomic.Int64 // messages the reader sent the actor that it has not taken yet
}

// streamSink is where one session's stream lines go.
type streamSink struct {
	conn     *nats.Conn
	subjects [3]string             // by streamIndex; "" for a type the host did not declare
	counts   [3]prometheus.Counter // messages_total by streamIndex
	errors   prometheus.Counter    // publish_errors_total{kind="event"}
	idle     bool                  // the host has an idle timeout: lines note when they came
	lastLine atomic.Int64          // unix nanoseconds of the last line published here
	lines    atomic.Int64          // lines published here
}

func streamIndex(t protocol.Type) int {
	switch t {
	case protocol.TypeProgress:
		return 0
	case protocol.TypeLog:
		return 1
	}
	return 2 // heartbeat
}

// toActor hands the actor a message from the reader; the actor calls taken once it
// has handled it.
func (st *stream) toActor(send func(any), m any) {
	st.untaken.Add(1)
	send(m)
}

func (st *stream) taken() { st.untaken.Add(-1) }

// publish publishes a stream line of type t itself, when the stream is open and the
// actor has taken everything before it; false: the line goes through the actor.
func (st *stream) publish(t protocol.Type, raw []byte) bool {
	s := st.sink.Load()
	if s == nil || st.untaken.Load() != 0 {
		return false
	}
	i := streamIndex(t)
	if s.subjects[i] == "" {
		return false // not declared: the actor reports it unhandled
	}
	s.counts[i].Inc()
	if s.idle {
		s.lastLine.Store(time.Now().UnixNano())
	}
	s.lines.Add(1)
	if err := bus.PublishEventOn(s.conn, s.subjects[i], raw); err != nil {
		s.errors.Inc()
	}
	return true
}

// openStream opens the stream for session s.
func (a *Agent) openStream(s *session) {
	if !a.dialect.Canonical() {
		return // a vendor's lines are its dialect's to decode, in the actor
	}
	sink := &streamSink{conn: a.cfg.Conn, errors: a.shared.events, idle: a.host.IdleTimeout > 0}
	for _, t := range []protocol.Type{protocol.TypeProgress, protocol.TypeLog, protocol.TypeHeartbeat} {
		i := streamIndex(t)
		sink.counts[i] = a.counter(t)
		if a.host.Sends(string(t)) {
			sink.subjects[i] = s.subject(a.host.Name, string(t))
		}
	}
	s.sink = sink
	a.stream.sink.Store(sink)
}

// closeStream closes the stream: lines go through the actor again.
func (a *Agent) closeStream() { a.stream.sink.Store(nil) }
