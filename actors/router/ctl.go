package router

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/nats-io/nats.go"

	"github.com/agentmux/agentmux/actors/agent"
	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/wire"
)

const ctlTimeout = 2 * time.Second

type (
	listRequest struct{}
	ctlSession  struct {
		verb    string // interrupt, message, cancel or pause
		session string
		text    string
		until   time.Time // pause: till when (zero: the host's max_pause)
	}
	ctlReply struct {
		OK     bool   `json:"ok"`
		Effect string `json:"effect,omitempty"`
		Error  string `json:"error,omitempty"`
	}
)

// StatsRequest asks the router for its hosts' processes and sessions; the answer is a
// *Stats.
type StatsRequest struct{}

// Stats are the router's figures for a heartbeat.
type Stats struct {
	Hosts    []wire.HostInfo // sorted by host
	Draining bool
}

func (r *Router) stats() *Stats {
	out := &Stats{Hosts: make([]wire.HostInfo, 0, len(r.pools)), Draining: !r.taking()}
	for _, p := range r.pools {
		out.Hosts = append(out.Hosts, wire.HostInfo{Name: p.host.Name, Pool: p.host.Pool, Busy: len(p.busy), Idle: len(p.idle), Queued: len(p.queue)})
	}
	slices.SortFunc(out.Hosts, func(a, b wire.HostInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func (r *Router) list() []wire.SessionInfo {
	out := []wire.SessionInfo{}
	now := time.Now()
	for _, p := range r.pools {
		for _, s := range p.busy {
			out = append(out, wire.SessionInfo{Session: s.start.Session, Host: p.host.Name, Task: s.start.Task, State: "running",
				Attempt: s.start.Attempt, AgeMS: float64(now.Sub(s.start.Started).Milliseconds())})
		}
		for _, s := range p.queue {
			out = append(out, wire.SessionInfo{Session: s.start.Session, Host: p.host.Name, Task: s.start.Task, State: "queued",
				Attempt: s.start.Attempt, AgeMS: float64(now.Sub(s.start.Started).Milliseconds())})
		}
	}
	return out
}

// ctlSession hands an interrupt, a message or a pause to the session's agent, which answers the
// requester; it returns a reply only when no agent runs the session. A cancel the
// router carries out itself (cancel.go).
func (r *Router) ctlSession(m *ctlSession) *ctlReply {
	if m.verb == "cancel" {
		return r.cancelSession(m.session, m.text)
	}
	for _, p := range r.pools {
		for id, s := range p.busy {
			if s.start.Session != m.session {
				continue
			}
			// The agent answers the control request itself: only it knows its capabilities.
			pid := p.procs[id]
			switch m.verb {
			case "pause":
				until := m.until
				if until.IsZero() {
					until = time.Now().Add(p.host.MaxPause.D())
				}
				if limit := time.Now().Add(p.host.MaxPause.D()); until.After(limit) {
					return &ctlReply{Error: fmt.Sprintf("host %s's sessions may be paused for %v at most (max_pause); pause it for less", p.host.Name, p.host.MaxPause.D())}
				}
				r.c.RequestWithCustomSender(pid, &agent.Handover{Reason: m.text, Until: until}, r.c.Sender())
			case "interrupt":
				r.c.RequestWithCustomSender(pid, &agent.Interrupt{Reason: m.text}, r.c.Sender())
			default:
				r.c.RequestWithCustomSender(pid, &agent.SendMessage{Text: m.text}, r.c.Sender())
			}
			return nil
		}
	}
	return &ctlReply{Error: "no running session " + m.session + " on this node"}
}

// ServeControl answers agentmux.ctl.<node>.{list,interrupt,message,cancel,drain,undrain} for the
// router. The request payload of interrupt and message is {"session": "...", "text":
// "..."}; of drain {"grace_ms": N, "handover": true|false} (handover: true when left out).
// Only a request a client published there is served (bus.CheckRequest); what the server
// delivers to the subject instead (a stream's message, an API answer) is dropped.
func ServeControl(nc *nats.Conn, system *actor.ActorSystem, router *actor.PID, node string, log *slog.Logger) ([]*nats.Subscription, error) {
	var subs []*nats.Subscription
	handle := func(verb string, fn func(m *nats.Msg) any) error {
		subject := wire.CtlSubject(node, verb)
		sub, err := nc.Subscribe(subject, func(m *nats.Msg) {
			if err := bus.CheckRequest(m, subject); err != nil {
				log.Warn("control request refused", "err", err)
				return
			}
			data, _ := json.Marshal(fn(m))
			_ = m.Respond(data) // the requester times out on its own if this fails
		})
		subs = append(subs, sub)
		return err
	}
	ask := func(msg any) any {
		res, err := system.Root.RequestFuture(router, msg, ctlTimeout).Result()
		if err != nil {
			return &ctlReply{Error: "router did not answer: " + err.Error()}
		}
		return res
	}
	err := handle("list", func(*nats.Msg) any { return ask(&listRequest{}) })
	if err == nil {
		err = handle("drain", func(m *nats.Msg) any {
			req := struct {
				GraceMS  int64 `json:"grace_ms"`
				Handover bool  `json:"handover"`
			}{Handover: true}
			if len(m.Data) > 0 {
				if err := json.Unmarshal(m.Data, &req); err != nil || req.GraceMS < 0 {
					return &ctlReply{Error: `want {"grace_ms": <milliseconds ≥ 0>, "handover": true|false}`}
				}
			}
			return ask(&Drain{Grace: time.Duration(req.GraceMS) * time.Millisecond, Handover: req.Handover})
		})
	}
	if err == nil {
		err = handle("undrain", func(*nats.Msg) any { return ask(&Undrain{}) })
	}
	for _, verb := range []string{"interrupt", "message", "cancel", "pause"} {
		if err != nil {
			break
		}
		err = handle(verb, func(m *nats.Msg) any {
			var req struct {
				Session, Text string
				UntilMS       int64 `json:"until_ms"`
			}
			if err := json.Unmarshal(m.Data, &req); err != nil || req.Session == "" {
				return &ctlReply{Error: `want {"session": "<id>", "text": "…"} (pause: and "until_ms", unix ms)`}
			}
			c := &ctlSession{verb: verb, session: req.Session, text: req.Text}
			if req.UntilMS > 0 {
				c.until = time.UnixMilli(req.UntilMS)
			}
			return ask(c)
		})
	}
	return subs, err
}
