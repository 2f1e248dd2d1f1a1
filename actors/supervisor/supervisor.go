package supervisor

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmux/agentmux/ask"
	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/decide"
	"github.com/agentmux/agentmux/internal/actorio"
	"github.com/agentmux/agentmux/internal/routines"
	"github.com/agentmux/agentmux/metrics"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/tracing"
	"github.com/agentmux/agentmux/wire"
)

// Config is what a Supervisor needs.
type Config struct {
	Supervisor *config.Supervisor
	Decider    decide.Decider
	Conn       *nats.Conn
	// Member names this member of the supervisor's queue group (the node) in the ask
	// protocol's status messages and in its answers.
	Member string
	// Pending holds requests waiting for a person; a human supervisor delivers the
	// answers given to them. Nil: no human decisions here.
	Pending *store.PendingStore
	// Routines owns the goroutines the actor starts (decisions, keep-alives, the human
	// answers' delivery); the node stops it after stopping the actor. Nil: a group of
	// the actor's own, which nobody waits for.
	Routines *routines.Group
	Metrics  *metrics.Set
	Log      *slog.Logger
	// Tracer makes a span of each decision, a child of the request's span on the
	// asking node when the ask carries its context (nil: none).
	Tracer trace.Tracer
}

// Props returns the props of a Supervisor.
func Props(cfg Config) *actor.Props {
	if cfg.Routines == nil {
		cfg.Routines = routines.New()
	}
	return actor.PropsFromProducer(func() actor.Actor {
		name := cfg.Supervisor.Name
		return &Supervisor{cfg: cfg, name: name, log: cfg.Log.With("supervisor", name), held: map[string]*nats.Msg{},
			counts: newCounts(cfg.Metrics, name)}
	})
}

// Supervisor is the actor of one supervisor.
type Supervisor struct {
	cfg      Config
	name     string
	log      *slog.Logger
	counts   counts
	sub      *nats.Subscription // the queue group's
	direct   *nats.Subscription // asks addressed to this member by name
	ctx      context.Context    // the decisions' parent; cancelled when the actor stops
	stop     context.CancelFunc // cancels ctx: decisions, keep-alives, human deliveries
	inflight int
	queue    []*askArrived
	held     map[string]*nats.Msg // asks acknowledged and not yet answered, by reply subject
	replies  sync.Pool            // *[]byte: replies being encoded; publishing copies them
	// immediate: the decider answers from memory, on the subscription's goroutine.
	immediate bool
}

type (
	askArrived struct {
		msg *nats.Msg
		at  time.Time // when it arrived: its deadline is the time it has left from then
	}
	decided   struct{ reply string }
	keepAlive struct{}
)

// Receive implements actor.Actor. It never blocks.
func (s *Supervisor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		s.start(c)
	case *askArrived:
		if _, dup := s.held[m.msg.Reply]; dup {
			return // asked again while this member holds it: the acknowledgement was enough
		}
		s.held[m.msg.Reply] = m.msg
		s.queue = append(s.queue, m)
		s.next(c)
	case *decided:
		s.inflight--
		delete(s.held, m.reply)
		s.next(c)
	case *keepAlive:
		for reply := range s.held {
			s.status(reply, wire.StatusAlive)
		}
	case *actor.Stopping:
		s.stopping()
	}
}

func (s *Supervisor) start(c actor.Context) {
	s.ctx, s.stop = context.WithCancel(context.Background())
	system, self := c.ActorSystem(), c.Self()
	handle := func(msg *nats.Msg) {
		s.status(msg.Reply, wire.StatusAck) // at once: the asker watches for it
		system.Root.Send(self, &askArrived{msg: msg, at: time.Now()})
	}
	if im, ok := s.cfg.Decider.(decide.Immediate); ok && im.Immediate() {
		s.immediate = true
		// Answers from memory take microseconds: decide on the subscription's own
		// goroutine, without an acknowledgement, a hop through the mailbox or a goroutine.
		handle = func(msg *nats.Msg) {
			arrived := time.Now()
			if ask, ok := s.parse(msg, arrived); ok {
				s.decide(s.ctx, msg, ask, arrived)
			}
		}
	}
	sub, err := s.cfg.Conn.QueueSubscribe(wire.AskSubject(s.name), s.name, s.published(wire.AskSubject(s.name), handle))
	if err != nil {
		s.log.Error("subscribe; this supervisor answers nothing", "err", err)
		return
	}
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		s.log.Warn("pending limits", "err", err)
	}
	s.sub = sub
	if s.cfg.Member != "" {
		// Re-asks after another member fell silent come here by name (ask.Directory).
		direct := wire.AskMemberSubject(s.name, s.cfg.Member)
		if s.direct, err = s.cfg.Conn.Subscribe(direct, s.published(direct, handle)); err != nil {
			s.log.Warn("subscribe to asks by name; re-asks reach this member through the queue group only", "err", err)
		} else if err := s.direct.SetPendingLimits(-1, -1); err != nil {
			s.log.Warn("pending limits", "err", err)
		}
	}
	s.cfg.Routines.Go(func(context.Context) {
		t := time.NewTicker(wire.KeepAliveInterval)
		defer t.Stop()
		for {
			select {
			case <-s.ctx.Done():
				return
			case <-t.C:
				system.Root.Send(self, &keepAlive{})
			}
		}
	})
	if s.cfg.Supervisor.Strategy == config.StrategyHuman && s.cfg.Pending != nil {
		// Starting the watch waits on JetStream, for a while when it is settling: not
		// in Receive.
		s.cfg.Routines.Go(func(context.Context) {
			if err := s.cfg.Pending.Deliver(s.ctx, s.name, func(err error) { s.log.Warn("human answer not delivered", "err", err) }); err != nil && s.ctx.Err() == nil {
				s.log.Error("human answers will not be delivered from this node", "err", err)
			}
		})
	}
}

// stopping lets go of every ask this member holds, so that the askers give them to
// another member at once, and ends the decisions without answering.
func (s *Supervisor) stopping() {
	for _, sub := range []*nats.Subscription{s.sub, s.direct} {
		if sub != nil {
			if err := sub.Unsubscribe(); err != nil {
				s.log.Warn("unsubscribe", "err", err)
			}
		}
	}
	if s.stop != nil {
		s.stop()
	}
	for reply := range s.held {
		s.status(reply, wire.StatusRelease)
	}
	if len(s.held) > 0 {
		s.log.Info("stopping: asks handed back to the other members", "asks", len(s.held))
	}
	s.held, s.queue = nil, nil
}

// next starts queued decisions up to the concurrency limit.
func (s *Supervisor) next(c actor.Context) {
	for s.inflight < s.cfg.Supervisor.Concurrency && len(s.queue) > 0 {
		arrived := s.queue[0]
		s.queue[0] = nil
		s.queue = s.queue[1:]
		msg := arrived.msg
		ask, ok := s.parse(msg, arrived.at)
		if !ok {
			delete(s.held, msg.Reply)
			continue
		}
		ctx := s.ctx
		if !actorio.Do(s.cfg.Routines, actorio.Self(c), 0, func(context.Context) any {
			s.decide(ctx, msg, ask, arrived.at) // within the ask's deadline, or until the member stops
			return &decided{reply: msg.Reply}
		}) {
			return // the node is stopping: stopping() hands the held asks back
		}
		s.inflight++
	}
}

// published passes handle the asks a node published on subject, and drops what the
// server delivered there instead (bus.CheckRequest): a reader of the bus cannot make a
// stream's message or an API answer into an ask.
func (s *Supervisor) published(subject string, handle nats.MsgHandler) nats.MsgHandler {
	return func(msg *nats.Msg) {
		if err := bus.CheckRequest(msg, subject); err != nil {
			s.log.Warn("refused", "err", err)
			return
		}
		handle(msg)
	}
}

// parse reads the ask msg, which arrived at arrived; false for an ask that is not one
// (declined) or whose time ran out.
func (s *Supervisor) parse(msg *nats.Msg, arrived time.Time) (*wire.Ask, bool) {
	ask, err := wire.DecodeAsk(msg.Data)
	if err != nil {
		s.log.Warn("request is not an Ask; declined", "err", err)
		s.respond(msg, &wire.Reply{Kind: wire.ReplyCancelled, Decider: "supervisor:" + s.name, Reason: "request is not an Ask: " + err.Error()})
		return nil, false
	}
	if deadline := ask.DeadlineFrom(arrived); !deadline.IsZero() && time.Now().After(deadline) {
		s.counts.expired.Inc()
		return nil, false
	}
	return ask, true
}

// decide decides one ask and answers it, unless the member stopped meanwhile (it let
// go of the ask; another member answers).
func (s *Supervisor) decide(parent context.Context, msg *nats.Msg, ask *wire.Ask, arrived time.Time) {
	ctx, req := parent, decide.RequestOf(ask, msg.Reply, arrived)
	if s.cfg.Tracer != nil {
		var span trace.Span
		ctx, span = s.cfg.Tracer.Start(tracing.FromHeader(ctx, msg.Header), "decide "+s.name, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("agentmux.supervisor", s.name), attribute.String("agentmux.node", s.cfg.Member),
				attribute.String("agentmux.session", ask.Session), attribute.String("agentmux.request", ask.ID), attribute.String("agentmux.request.type", ask.Type)))
		defer span.End()
	}
	if !s.immediate && !req.Deadline.IsZero() { // one from memory needs no deadline (nor its timer)
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, req.Deadline)
		defer cancel()
	}
	begun := time.Now()
	dec, err := s.cfg.Decider.Decide(ctx, req)
	s.counts.time.Observe(time.Since(begun).Seconds())
	if parent.Err() != nil {
		s.counts.released.Inc()
		return
	}
	if err != nil {
		s.counts.errored.Inc()
		s.log.WarnContext(ctx, "decision failed; declining", "session", ask.Session, "request", ask.ID, "err", err)
		s.respond(msg, &wire.Reply{Kind: wire.ReplyCancelled, Decider: "supervisor:" + s.name, Reason: err.Error()})
		return
	}
	outcome := s.counts.decided
	switch dec.Verdict {
	case decide.Defer:
		s.counts.deferred.Inc()
		s.counts.humanPending.Inc()
		s.status(msg.Reply, wire.StatusDeferred) // a person answers; the delivery goes to msg.Reply
		return
	case decide.UseDefault:
		outcome = s.counts.useDefault
	case decide.Decline:
		outcome = s.counts.declined
	}
	outcome.Inc()
	s.respond(msg, dec.Reply())
}

func (s *Supervisor) respond(msg *nats.Msg, r *wire.Reply) {
	r.Member = s.cfg.Member
	buf, _ := s.replies.Get().(*[]byte)
	if buf == nil {
		buf = new([]byte)
	}
	*buf = r.AppendJSON((*buf)[:0])
	if err := msg.Respond(*buf); err != nil {
		s.log.Warn("reply", "err", err)
	}
	s.replies.Put(buf)
}

func (s *Supervisor) status(reply, status string) {
	if err := ask.SendStatus(s.cfg.Conn, reply, status, s.cfg.Member); err != nil {
		s.log.Warn("ask status not sent", "status", status, "err", err)
	}
}
