package attach

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/protocol"
	"github.com/agentmux/agentmux/wire"
)

// bridge is the in-process agent of an attached source: it speaks agentmux's own
// protocol to the node, one session at a time, writing each request a hook sent as the
// agent's request and giving the hook the response the node writes back.
type bridge struct {
	hub  *Hub
	host *config.Host
	out  io.Writer
	seq  int // numbers requests that came without an id, or with one already waiting
}

func newBridge(h *Hub, host *config.Host, out io.Writer) *bridge {
	return &bridge{hub: h, host: host, out: out}
}

// run serves the sessions the node starts on this process until its stdin closes.
func (b *bridge) run(stdin io.Reader) error {
	lines := make(chan []byte, 16)
	go read(stdin, b.host.MaxLineBytes, lines)
	for line := range lines {
		id, ok := sessionOf(line)
		if !ok {
			continue // no session runs: nothing else is written to an agent without capabilities
		}
		s := b.hub.bind(b.host.Name, id)
		if s == nil {
			if err := b.write(resultLine("error", "no hook opened session "+id+"; an attached session starts from its agent's requests")); err != nil {
				return err
			}
			continue
		}
		eof, err := b.serve(s, lines)
		if err != nil || eof {
			return err
		}
	}
	return nil
}

// read frames stdin into lines until it closes.
func read(stdin io.Reader, limit int, lines chan<- []byte) {
	defer close(lines)
	r := protocol.NewReader(stdin, limit)
	for {
		line, err := r.Next()
		var tooLong *protocol.LineTooLongError
		switch {
		case errors.As(err, &tooLong):
			continue
		case err != nil:
			return
		}
		lines <- append([]byte(nil), line...)
	}
}

// serve runs session s: each request its hooks send is written, and answered with the
// response read back, until the agent ends it, it is idle for the source's
// idle_timeout, or the node stops the process (eof).
func (b *bridge) serve(s *session, lines <-chan []byte) (eof bool, err error) {
	waiting := map[string]*call{}
	idleFor := b.host.Attached.IdleTimeout.D()
	idle := time.NewTimer(idleFor)
	defer idle.Stop()
	why := ""
	draining, drained := b.hub.drainingChan(), false
	const handedOver = "its node drains: the session's next request opens it on another node"
	for {
		if why != "" && len(waiting) == 0 {
			if b.hub.finish(s, false) {
				return false, b.write(resultLine("ok", why))
			}
			why = "" // requests came meanwhile: it goes on
		}
		select {
		case c := <-s.calls:
			idle.Stop()
			if c.req.End {
				why = "the agent ended its session"
				if c.req.Event != "" {
					why += " (" + c.req.Event + ")"
				}
				c.reply(&wire.AttachReply{Session: s.id, Attempt: s.attempt, Outcome: "ended"})
				continue
			}
			id, line, err := b.request(c.req.Request, waiting)
			if err != nil {
				c.reply(&wire.AttachReply{Session: s.id, Attempt: s.attempt, Code: wire.AttachInvalid, Error: err.Error()})
				continue
			}
			waiting[id] = c
			if err := b.write(line); err != nil {
				b.hub.finish(s, true)
				b.endAll(s, waiting)
				return true, nil
			}
		case line, ok := <-lines:
			if !ok {
				b.hub.finish(s, true)
				b.endAll(s, waiting)
				return true, nil
			}
			r, ok := responseOf(line)
			if !ok {
				continue
			}
			if c := waiting[r.ID]; c != nil {
				delete(waiting, r.ID)
				c.reply(&wire.AttachReply{Session: s.id, Attempt: s.attempt, Value: r.Value, Outcome: r.Outcome, Reason: r.Reason})
			}
			switch {
			case len(waiting) > 0 || why != "":
			case drained:
				why = handedOver
			default:
				idle.Reset(idleFor)
			}
		case <-draining:
			draining, drained = nil, true
			if len(waiting) == 0 && why == "" {
				why = handedOver
			}
		case <-idle.C:
			if len(waiting) == 0 {
				why = "no request for " + idleFor.String()
			}
		}
	}
}

// endAll answers the requests still waiting that the session ended.
func (b *bridge) endAll(s *session, waiting map[string]*call) {
	for id, c := range waiting {
		c.reply(&wire.AttachReply{Session: s.id, Attempt: s.attempt, Code: wire.AttachEnded,
			Error: "attach: session " + s.id + " ended before this request was answered"})
		delete(waiting, id)
	}
}

// request is the line that asks req, with an id no other waiting request has.
func (b *bridge) request(req json.RawMessage, waiting map[string]*call) (string, []byte, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(req, &fields); err != nil {
		return "", nil, fmt.Errorf("attach: the request: %w", err)
	}
	var id string
	_ = json.Unmarshal(fields["id"], &id)
	switch {
	case id == "":
		b.seq++
		id = "h" + strconv.Itoa(b.seq)
	case waiting[id] != nil:
		b.seq++
		id += "~" + strconv.Itoa(b.seq)
	}
	fields["id"], _ = json.Marshal(id)
	line, err := json.Marshal(fields)
	if err != nil {
		return "", nil, err
	}
	return id, append(line, '\n'), nil
}

func (b *bridge) write(line []byte) error {
	_, err := b.out.Write(line)
	return err
}

type response struct {
	ID      string          `json:"id"`
	Value   json.RawMessage `json:"value"`
	Outcome string          `json:"outcome"`
	Reason  string          `json:"reason"`
}

func responseOf(line []byte) (*response, bool) {
	var r struct {
		Type string `json:"type"`
		response
	}
	if json.Unmarshal(line, &r) != nil || r.Type != "response" {
		return nil, false
	}
	return &r.response, true
}

// resultLine ends a session: ok with why as its result, or error.
func resultLine(status, why string) []byte {
	var line []byte
	if status == "ok" {
		line, _ = json.Marshal(map[string]string{"type": "result", "text": why})
	} else {
		line, _ = json.Marshal(map[string]string{"type": "error", "message": why})
	}
	return append(line, '\n')
}
