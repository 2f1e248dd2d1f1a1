package console

import (
	"context"
	"encoding/json"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmux/agentmux/api"
	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// historyTimeout bounds the reading of one session's kept events.
const historyTimeout = 30 * time.Second

// liveEvent is an event as it arrived on the bus.
type liveEvent struct {
	subject string
	data    []byte
}

// eventKey tells one event from another by its subject and data.
type eventKey struct{ subject, data string }

// sessionEvents sends out a session's events: those the history keeps first (a
// finished session's, after a restart too), then each as it arrives, until ctx ends.
// It listens before it reads the history, and what arrived while it read and the
// history also held is sent once.
func (s *Server) sessionEvents(ctx context.Context, id string, out chan<- []byte) error {
	subject := "agentmux.evt.*." + id + ".>"
	in := make(chan liveEvent, sessionEvents)
	sub, err := s.cfg.Conn.Subscribe(subject, func(m *nats.Msg) {
		if bus.CheckEvent(m, subject) != nil {
			return
		}
		select {
		case in <- liveEvent{m.Subject, m.Data}:
		default: // the page is too far behind; it misses this one
		}
	})
	if err != nil {
		return err
	}
	go func() {
		defer func() { _ = sub.Unsubscribe() }()
		send := func(subject string, at time.Time, data []byte) bool {
			_, _, typ, _ := wire.ParseEventSubject(subject)
			line, _ := json.Marshal(map[string]any{"type": typ, "time": at.UnixMilli(), "data": api.RawOrString(data)})
			select {
			case out <- line:
				return true
			case <-ctx.Done():
				return false
			}
		}
		// The history, counted by event, so that what also came live meanwhile is sent once.
		seen := map[eventKey]int{}
		hctx, cancel := context.WithTimeout(ctx, historyTimeout)
		err := store.Events(hctx, s.cfg.Conn, id, 0, func(e store.SessionEvent) error {
			seen[eventKey{e.Subject, string(e.Data)}]++
			if !send(e.Subject, e.Time, e.Data) {
				return ctx.Err()
			}
			return nil
		})
		cancel()
		if err != nil && ctx.Err() == nil {
			s.cfg.Log.Debug("no history of the session's events; live ones only", "session", id, "err", err)
		}
		// What arrived while the history was read may be in it: sent once. What
		// arrives after is new, whatever it says.
		for drained := false; !drained; {
			select {
			case e := <-in:
				if k := (eventKey{e.subject, string(e.data)}); seen[k] > 0 {
					seen[k]--
				} else if !send(e.subject, time.Now(), e.data) {
					return
				}
			default:
				drained = true
			}
		}
		for {
			select {
			case <-ctx.Done():
				return
			case e := <-in:
				if !send(e.subject, time.Now(), e.data) {
					return
				}
			}
		}
	}()
	return nil
}
