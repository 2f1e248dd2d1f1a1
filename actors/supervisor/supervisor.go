package supervisor

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/nats-io/nats.go"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/decide"
	"github.com/agentmux/agentmux/metrics"
)

// Config is what a Supervisor needs.
type Config struct {
	Supervisor *config.Supervisor
	Decider    decide.Decider
	Conn       *nats.Conn
	// Pending holds requests waiting for a person; a human supervisor delivers the
	// answers given to them. Nil: no human decisions here.
	Pending *bus.PendingStore
	Metrics *metrics.Set
	Log     *slog.Logger
}

// Props returns the props of a Supervisor.
func Props(cfg Config) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor {
		return &Supervisor{cfg: cfg, name: cfg.Supervisor.Name, log: cfg.Log.With("supervisor", cfg.Supervisor.Name)}
	})
}

// Supervisor is the actor of one supervisor.
type Supervisor struct {
	cfg      Config
	name     string
	log      *slog.Logger
	sub      *nats.Subscription
	inflight int
	queue    []*nats.Msg
	stop     context.CancelFunc // ends the delivery of human answers
}

type (
	askArrived struct{ msg *nats.Msg }
	decided    struct{}
)

// Receive implements actor.Actor. It never blocks.
func (s *Supervisor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		system, self := c.ActorSystem(), c.Self()
		handle := func(msg *nats.Msg) { system.Root.Send(self, &askArrived{msg: msg}) }
		if im, ok := s.cfg.Decider.(decide.Immediate); ok && im.Immediate() {
			// Answers from memory take microseconds: decide on the subscription's own
			// goroutine, without a hop through the mailbox and a goroutine per request.
			handle = func(msg *nats.Msg) {
				if ask, ok := s.parse(msg); ok {
					s.decide(msg, ask, time.UnixMilli(ask.Deadline))
				}
			}
		}
		sub, err := s.cfg.Conn.QueueSubscribe(bus.AskSubject(s.name), s.name, handle)
		if err != nil {
			s.log.Error("subscribe; this supervisor answers nothing", "err", err)
			return
		}
		if err := sub.SetPendingLimits(-1, -1); err != nil {
			s.log.Warn("pending limits", "err", err)
		}
		s.sub = sub
		if s.cfg.Supervisor.Strategy == config.StrategyHuman && s.cfg.Pending != nil {
			ctx, cancel := context.WithCancel(context.Background())
			s.stop = cancel
			if err := s.cfg.Pending.Deliver(ctx, s.name, func(err error) { s.log.Warn("human answer not delivered", "err", err) }); err != nil {
				s.log.Error("human answers will not be delivered from this node", "err", err)
			}
		}
	case *askArrived:
		s.queue = append(s.queue, m.msg)
		s.next(c)
	case *decided:
		s.inflight--
		s.next(c)
	case *actor.Stopping:
		if s.stop != nil {
			s.stop()
		}
		if s.sub != nil {
			if err := s.sub.Unsubscribe(); err != nil {
				s.log.Warn("unsubscribe", "err", err)
			}
		}
	}
}

// next starts queued decisions up to the concurrency limit.
func (s *Supervisor) next(c actor.Context) {
	for s.inflight < s.cfg.Supervisor.Concurrency && len(s.queue) > 0 {
		msg := s.queue[0]
		s.queue[0] = nil
		s.queue = s.queue[1:]
		ask, ok := s.parse(msg)
		if !ok {
			continue
		}
		s.inflight++
		system, self := c.ActorSystem(), c.Self()
		go func() {
			s.decide(msg, ask, time.UnixMilli(ask.Deadline))
			system.Root.Send(self, &decided{})
		}()
	}
}

// parse reads an Ask; a malformed one is declined and an expired one dropped.
func (s *Supervisor) parse(msg *nats.Msg) (*bus.Ask, bool) {
	var ask bus.Ask
	if err := json.Unmarshal(msg.Data, &ask); err != nil {
		s.log.Warn("request is not an Ask; declined", "err", err)
		s.respond(msg, &bus.Reply{Cancelled: true, Decider: "supervisor:" + s.name, Reason: "request is not an Ask: " + err.Error()})
		return nil, false
	}
	if ask.Deadline > 0 && time.Now().After(time.UnixMilli(ask.Deadline)) {
		s.cfg.Metrics.Decisions.WithLabelValues(s.name, "expired").Inc()
		return nil, false
	}
	return &ask, true
}

func (s *Supervisor) decide(msg *nats.Msg, ask *bus.Ask, deadline time.Time) {
	ctx := context.Background()
	if ask.Deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	begun := time.Now()
	dec, err := s.cfg.Decider.Decide(ctx, &decide.Request{Host: ask.Host, Session: ask.Session, Type: ask.Type,
		ID: ask.ID, Text: ask.Text, Request: ask.Request, Default: ask.Default, Deadline: deadline,
		ReplyTo: msg.Reply, PostProcess: ask.PostProcess})
	s.cfg.Metrics.DecisionTime.WithLabelValues(s.name).Observe(time.Since(begun).Seconds())
	if err != nil {
		s.cfg.Metrics.Decisions.WithLabelValues(s.name, "error").Inc()
		s.log.Warn("decision failed; declining", "session", ask.Session, "request", ask.ID, "err", err)
		s.respond(msg, &bus.Reply{Cancelled: true, Decider: "supervisor:" + s.name, Reason: err.Error()})
		return
	}
	outcome := "decided"
	switch {
	case dec.Deferred:
		s.cfg.Metrics.Decisions.WithLabelValues(s.name, "deferred").Inc()
		s.cfg.Metrics.HumanPending.WithLabelValues(s.name).Inc()
		return // a person answers; the delivery goes to msg.Reply
	case dec.UseDefault:
		outcome = "default"
	case dec.Cancelled:
		outcome = "declined"
	}
	s.cfg.Metrics.Decisions.WithLabelValues(s.name, outcome).Inc()
	s.respond(msg, &bus.Reply{Value: dec.Value, UseDefault: dec.UseDefault, Cancelled: dec.Cancelled, Decider: dec.Decider, Reason: dec.Reason})
}

func (s *Supervisor) respond(msg *nats.Msg, r *bus.Reply) {
	data, _ := json.Marshal(r)
	if err := msg.Respond(data); err != nil {
		s.log.Warn("reply", "err", err)
	}
}
