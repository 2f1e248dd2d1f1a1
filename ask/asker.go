package ask

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/internal/due"
	"github.com/agentmux/agentmux/wire"
)

// Defaults of AskerConfig.
const (
	DefaultAckTimeout = 2 * time.Second // a member acknowledges an ask at once
	DefaultSilence    = 3 * time.Second // three missed keep-alives: the member is gone
	DefaultLateGrace  = 2 * time.Second // replies are still taken, as late ones, this long after the deadline
	// A supervisor nobody runs is asked again after 50 ms, then twice as long each
	// time up to a second: a member that starts is found within about a tenth of a
	// second, and a question nobody takes costs a handful of asks, not dozens.
	minAskBackoff = 50 * time.Millisecond
	maxAskBackoff = time.Second
	// sweepSlack is how late the Asker may act on a call that fell due, so that the
	// calls falling due within it are swept on one wake: a node asking a thousand
	// questions a second wakes for them a few dozen times a second, not twice per
	// question (each ask's acknowledgement wait, then its late-answer window). Nothing
	// it times needs to be closer: a member's acknowledgement waits seconds, and a
	// request's default is written by its agent's own timer.
	sweepSlack = 20 * time.Millisecond
)

// Counter is the one method of a metric the Asker needs (prometheus.Counter has it).
type Counter interface{ Inc() }

// AskCounters count what happens to asks. Nil counters count nothing.
type AskCounters struct {
	Answered     Counter // the first answer to an ask
	NoResponders Counter // no member subscribed when asked; asked again after a backoff
	Timeout      Counter // no answer before the deadline (the default is written)
	Error        Counter // publishing failed
	Reasked      Counter // asked again: a member went silent, let go, or the connection came back
	Duplicate    Counter // an answer after the first, or after the request was settled
}

// AskerConfig configures an Asker; zero fields take the defaults.
type AskerConfig struct {
	// AckTimeout is how long a failover ask waits for a member's acknowledgement (or its
	// answer) before it is asked again, of whichever member the queue group picks.
	AckTimeout time.Duration
	// Silence is the longest gap between a member's keep-alives before the ask is asked
	// again. Members send one every KeepAliveInterval.
	Silence time.Duration
	// LateGrace is how long after its deadline an ask keeps listening, so that late and
	// duplicate answers are reported rather than lost.
	LateGrace time.Duration
	// Members lists the live members of a supervisor (Directory.Members). With it, an
	// ask whose member fell silent goes to another member by name; without it, to the
	// queue group again.
	Members func(supervisor string) []string
	// OnWithdrawn is called when an ask a person was deciding (a member said
	// StatusDeferred) is given up without their answer: the session ended or the
	// request got its default. The key names the person's pending request ("h-" +
	// key). It is called on the caller's goroutine and must not block.
	OnWithdrawn func(key, why string)
	Counters    AskCounters
	Log         *slog.Logger
	// ClockOffset moves the Deadline the asks carry, as the node's wall clock would if
	// it were off by as much (node.Options.ClockOffset); only tests set it. Nothing the
	// Asker or a supervisor decides depends on it: they go by Timeout.
	ClockOffset time.Duration
}

// Asker sends a node's requests to supervisors over one reply subscription for the
// whole node: no goroutine, context or subscription per request.
//
// The ask protocol, for members that acknowledge (every supervisor agentmux runs):
// a member replies StatusAck at once, StatusAlive every KeepAliveInterval while it
// decides, and then the answer. An ask that is not acknowledged within AckTimeout, or
// whose member falls silent for Silence, is asked again of the queue group, so a member
// that died, hung or was cut off mid-decision costs seconds, not the deadline. A member
// that lets go (StatusRelease, when it stops) is replaced at once; one that handed the
// request to a person (StatusDeferred) is not watched any more: the answer comes from
// the durable pending store. Asks still open when the connection comes back are asked
// again, since replies sent meanwhile are lost. Members deduplicate by reply subject,
// which stays the same for every re-ask, so one ask is decided once per member.
//
// Every answer is delivered, in arrival order: the caller keeps the first and reports
// the rest (Duplicate counts them). A request nobody subscribes to is asked again with
// backoff until its deadline.
type Asker struct {
	nc     *nats.Conn
	cfg    AskerConfig
	prefix string // of the replies' subjects: prefix + the ask's key
	// replies matches every reply: prefix + "*".
	replies string
	sub     *nats.Subscription

	mu     sync.Mutex // protects calls, closed, nobody, due and wakeAt
	calls  map[string]*call
	closed bool
	// nobody holds the subjects an ask found no member on (the server's no-responders
	// reply), or that one is being asked again on to find out, and when. A call whose
	// backoff runs out within minAskBackoff of that waits another backoff instead of
	// asking: a supervisor nobody runs costs each request one ask, and one more ask per
	// backoff for all of them, not one per request. An answer or status on the subject
	// forgets it, and the calls waiting for it are asked at once.
	nobody map[string]time.Time
	// due holds every call's next due time, soonest first, behind the one timer wake:
	// no timer, and no goroutine when one fires, per ask. An entry a call left behind
	// when it was armed again is skipped when it comes due.
	due    due.Heap
	wake   *time.Timer
	wakeAt time.Time // when wake fires; zero when stopped
}

type callState uint8

const (
	stateAsking   callState = iota // published; waiting for an acknowledgement or an answer
	stateHeld                      // a member acknowledged and keeps it alive
	stateDeferred                  // a person answers; the pending store holds it
	stateSettled                   // answered or given up; listening for late replies only
)

type call struct {
	ask      *wire.Ask   // nil once settled
	header   nats.Header // every copy's: the request's trace context, or nil
	subject  string      // the supervisor's queue group
	reply    string      // the same for every copy: members deduplicate by it
	deadline time.Time
	watch    bool // the member is expected to acknowledge and keep alive
	state    callState
	answered bool
	early    bool // settled by the caller before the deadline: answered or withdrawn, not timed out
	backoff  time.Duration
	key      string
	retry    bool      // the wait runs out a no-responders backoff
	due      time.Time // when the current wait falls due; earlier entries are stale
	member   string    // who holds it, from the last acknowledgement
	tried    []string  // members asked by name, or that fell silent: not asked by name again
	sent     string    // the subject of the last copy sent
	deliver  func(*wire.Reply)
}

// NewAsker subscribes the node's reply inbox.
func NewAsker(nc *nats.Conn, cfg AskerConfig) (*Asker, error) {
	if cfg.AckTimeout <= 0 {
		cfg.AckTimeout = DefaultAckTimeout
	}
	if cfg.Silence <= 0 {
		cfg.Silence = DefaultSilence
	}
	if cfg.LateGrace <= 0 {
		cfg.LateGrace = DefaultLateGrace
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	a := &Asker{nc: nc, cfg: cfg, prefix: nc.NewInbox() + ".", calls: map[string]*call{}, nobody: map[string]time.Time{}}
	a.replies = a.prefix + "*"
	a.wake = time.AfterFunc(time.Hour, a.sweep)
	a.wake.Stop()
	sub, err := nc.Subscribe(a.replies, a.onReply)
	if err != nil {
		return nil, fmt.Errorf("ask: reply subscription for asks: %w", err)
	}
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		return nil, fmt.Errorf("ask: reply subscription for asks: %w", err)
	}
	a.sub = sub
	return a, nil
}

// Close stops listening; calls still open get no answer (their callers' timers write
// defaults). It is idempotent.
func (a *Asker) Close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return
	}
	a.closed = true
	_ = a.sub.Unsubscribe()
	a.wake.Stop()
	a.calls, a.due = map[string]*call{}, due.Heap{}
}

// TooLargeError is Ask's error for an ask the NATS server would refuse: no supervisor
// can be asked it.
type TooLargeError struct{ Size, Limit int }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the request is %d bytes as an ask, over the %d the NATS server takes", e.Size, e.Limit)
}

// Ask sends q to the queue group on subject and calls deliver with every answer, from
// the subscription's goroutine, until LateGrace after deadline. With failover the
// members are held to the ask protocol (acknowledge, keep alive); without it (a
// supervisor outside agentmux) the ask waits for an answer until the deadline, unless
// the member acknowledges of its own accord. header, when not nil, goes with every
// copy (the request's trace context).
//
// The Asker owns q from then on: each copy it sends carries the time left then
// (Timeout), so a supervisor's deadline does not depend on its clock agreeing with
// this one; Deadline is set to deadline. An ask too large for the server is not sent:
// the error is a *TooLargeError.
//
// settle, called when the caller has its answer (why empty) or gave up on one (why says
// why: it wrote a default, the session ended), stops asking again; late answers are
// still delivered to be reported.
func (a *Asker) Ask(subject string, q *wire.Ask, header nats.Header, deadline time.Time, failover bool, deliver func(*wire.Reply)) (settle func(why string), err error) {
	key := nuid.Next()
	c := &call{key: key, ask: q, header: header, subject: subject, reply: a.prefix + key, deadline: deadline, watch: failover,
		backoff: minAskBackoff, deliver: deliver}
	q.Deadline = deadline.Add(a.cfg.ClockOffset).UnixMilli()
	now := time.Now()
	msg := a.copyOf(c, subject, now)
	if limit := bus.BodyLimit(a.nc); len(msg.Data) > limit {
		return nil, &TooLargeError{Size: len(msg.Data), Limit: limit}
	}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return func(string) {}, nil
	}
	a.calls[key] = c
	a.arm(c, a.nextWait(c, now))
	a.mu.Unlock()
	a.publish(msg)
	return func(why string) { a.settle(key, why) }, nil
}

// copyOf is c's ask to send now on subject, with the time left till its deadline.
// Callers hold mu, or have not shared c yet.
func (a *Asker) copyOf(c *call, subject string, now time.Time) *nats.Msg {
	c.ask.Timeout = max(c.deadline.Sub(now).Milliseconds(), 1)
	c.sent = subject
	return &nats.Msg{Subject: subject, Reply: c.reply, Header: c.header, Data: c.ask.AppendJSON(nil)}
}

// Reconnected asks again every open ask: replies sent while the connection was down
// are lost. Call it from the connection's reconnect handler.
func (a *Asker) Reconnected() {
	a.mu.Lock()
	var again []*nats.Msg
	now := time.Now()
	for _, c := range a.calls {
		if c.state == stateSettled || !now.Before(c.deadline) {
			continue
		}
		c.state = stateAsking
		a.arm(c, a.nextWait(c, now))
		again = append(again, a.copyOf(c, c.subject, now))
	}
	a.mu.Unlock()
	for _, m := range again {
		inc(a.cfg.Counters.Reasked)
		a.publish(m)
	}
	if len(again) > 0 {
		a.cfg.Log.Info("NATS connection back: asked open requests again", "requests", len(again))
	}
}

// nextWait is how long c may wait in its state before its timer acts. Callers hold mu.
func (a *Asker) nextWait(c *call, now time.Time) time.Duration {
	untilDeadline := c.deadline.Sub(now)
	switch {
	case c.state == stateSettled || untilDeadline <= 0:
		return c.deadline.Add(a.cfg.LateGrace).Sub(now)
	case c.state == stateAsking && c.watch:
		return min(a.cfg.AckTimeout, untilDeadline)
	case c.state == stateHeld:
		return min(a.cfg.Silence, untilDeadline)
	}
	return untilDeadline // a person answers, or a member outside agentmux
}

// arm makes c due d from now; with d zero, at once. Callers hold mu.
func (a *Asker) arm(c *call, d time.Duration) {
	now := time.Now()
	c.due = now.Add(d)
	a.due.Add(c.key, c.due)
	fire := c.due
	if d > 0 {
		fire = fire.Add(sweepSlack)
	}
	if a.wakeAt.IsZero() || fire.Before(a.wakeAt) {
		a.wakeAt = fire
		a.wake.Reset(fire.Sub(now))
	}
}

// sweep acts on every call that has come due.
func (a *Asker) sweep() {
	a.mu.Lock()
	now := time.Now()
	var keys []string
	for e, ok := a.due.PopDue(now); ok; e, ok = a.due.PopDue(now) {
		if c, ok := a.calls[e.Key]; ok && c.due.Equal(e.At) {
			keys = append(keys, e.Key)
		}
	}
	a.wakeAt = time.Time{}
	if e, ok := a.due.Soonest(); ok && !a.closed {
		a.wakeAt = e.At.Add(sweepSlack)
		a.wake.Reset(a.wakeAt.Sub(now))
	}
	a.mu.Unlock()
	for _, key := range keys {
		a.onTimer(key)
	}
}

func (a *Asker) publish(m *nats.Msg) {
	if err := a.nc.PublishMsg(m); err != nil {
		inc(a.cfg.Counters.Error)
		a.cfg.Log.Warn("ask not sent; it is asked again when its member is due", "subject", m.Subject, "err", err)
	}
}

func (a *Asker) settle(key, why string) {
	a.mu.Lock()
	c, ok := a.calls[key]
	withdrawn := ok && c.state == stateDeferred && why != ""
	if ok && c.state != stateSettled {
		now := time.Now()
		c.early = now.Before(c.deadline)
		a.settleLocked(c, now)
	}
	a.mu.Unlock()
	if withdrawn && a.cfg.OnWithdrawn != nil {
		a.cfg.OnWithdrawn(key, why)
	}
}

// settleLocked stops asking: c listens for late answers until LateGrace after its
// deadline. Callers hold mu.
func (a *Asker) settleLocked(c *call, now time.Time) {
	c.state, c.ask = stateSettled, nil
	a.arm(c, a.nextWait(c, now))
}

// onTimer acts on a call whose wait ran out: it asks again, or stops listening.
func (a *Asker) onTimer(key string) {
	a.mu.Lock()
	c, ok := a.calls[key]
	now := time.Now()
	if !ok || now.Before(c.due) {
		a.mu.Unlock()
		return // stale: the timer was pointed elsewhere meanwhile
	}
	if c.state != stateSettled && !now.Before(c.deadline) {
		a.settleLocked(c, now) // no answer by the deadline: listen for a late one
		a.mu.Unlock()
		return
	}
	if c.state == stateSettled {
		// Listening is over. Nothing answered, and the caller gave up only at the
		// deadline: a timeout.
		delete(a.calls, key)
		timedOut := !c.answered && !c.early
		a.mu.Unlock()
		if timedOut {
			inc(a.cfg.Counters.Timeout)
		}
		return
	}
	if a.nc.Status() != nats.CONNECTED {
		// Nothing gets through now; Reconnected asks again when the connection is back.
		a.arm(c, a.nextWait(c, now))
		a.mu.Unlock()
		return
	}
	member, retry := c.member, c.retry
	if at, found := a.nobody[c.subject]; retry && found {
		if now.Sub(at) < minAskBackoff {
			a.backOff(c, now) // another ask found nobody there a moment ago, or is finding out
			a.mu.Unlock()
			return
		}
		a.nobody[c.subject] = now // this one finds out for the others
	}
	c.state, c.member, c.retry = stateAsking, "", false
	a.arm(c, a.nextWait(c, now))
	var msg *nats.Msg
	if retry {
		msg = a.copyOf(c, c.subject, now)
	} else {
		msg = a.another(c, member, now)
	}
	session, request := c.ask.Session, c.ask.ID
	a.mu.Unlock()
	if !retry {
		inc(a.cfg.Counters.Reasked)
		a.cfg.Log.Info("supervisor member silent; asking again", "subject", msg.Subject, "request", request, "session", session, "silent", member)
	}
	a.publish(msg)
}

func (a *Asker) onReply(m *nats.Msg) {
	if err := bus.CheckReply(m, a.replies); err != nil {
		a.cfg.Log.Warn("reply refused", "err", err)
		return
	}
	key := m.Subject[len(a.prefix):]
	status := m.Header.Get(wire.HeaderStatus)
	a.mu.Lock()
	c, ok := a.calls[key]
	if !ok {
		a.mu.Unlock()
		return // long past its deadline
	}
	now := time.Now()
	if status == "" && len(m.Data) == 0 && m.Header.Get("Status") == "503" {
		a.onNoResponders(c, now)
		a.mu.Unlock()
		return
	}
	if _, found := a.nobody[c.sent]; found {
		a.somebodyOn(c.sent)
	}
	if status != "" {
		msg := a.onStatus(c, status, m.Header.Get(wire.HeaderMember), now)
		a.mu.Unlock()
		if msg != nil {
			inc(a.cfg.Counters.Reasked)
			a.publish(msg)
		}
		return
	}
	first := !c.answered && c.state != stateSettled
	c.answered = true
	if c.state != stateSettled {
		a.settleLocked(c, now)
	}
	deliver := c.deliver
	a.mu.Unlock()
	if first {
		inc(a.cfg.Counters.Answered)
	} else {
		inc(a.cfg.Counters.Duplicate)
	}
	reply, err := wire.DecodeReply(m.Data)
	if err != nil {
		// Not a wire.Reply: validation turns it into the default, outcome invalid.
		reply = &wire.Reply{Value: m.Data, Decider: "unknown", Reason: "supervisor reply is not a JSON object: " + err.Error()}
	}
	if reply.Member == "" {
		reply.Member = m.Header.Get(wire.HeaderMember)
	}
	deliver(reply)
}

// onNoResponders asks again after the backoff, while the deadline allows. Callers hold
// mu.
func (a *Asker) onNoResponders(c *call, now time.Time) {
	if c.state == stateSettled {
		return
	}
	inc(a.cfg.Counters.NoResponders)
	a.nobody[c.sent] = now
	a.backOff(c, now)
}

// somebodyOn forgets that nobody was found on subject, now that a member answered
// there, and asks again at once every call waiting out a backoff for it. Callers hold
// mu.
func (a *Asker) somebodyOn(subject string) {
	delete(a.nobody, subject)
	for _, w := range a.calls {
		if w.retry && w.state == stateAsking && w.subject == subject {
			a.arm(w, 0)
		}
	}
}

// backOff makes c ask again after its backoff, while the deadline allows, and doubles
// the backoff. Callers hold mu.
func (a *Asker) backOff(c *call, now time.Time) {
	if now.Add(c.backoff).Before(c.deadline) {
		c.state, c.retry = stateAsking, true
		a.arm(c, c.backoff)
		c.backoff = min(c.backoff*2, maxAskBackoff)
		return
	}
	a.arm(c, a.nextWait(c, now))
}

// onStatus applies a member's status message; it returns the ask to publish again, if
// any. Callers hold mu.
func (a *Asker) onStatus(c *call, status, member string, now time.Time) *nats.Msg {
	if c.state == stateSettled || c.state == stateDeferred {
		return nil
	}
	switch status {
	case wire.StatusAck, wire.StatusAlive:
		c.watch = true
		c.state, c.member, c.retry = stateHeld, member, false
		a.arm(c, a.nextWait(c, now))
	case wire.StatusDeferred:
		c.state, c.member = stateDeferred, member
		a.arm(c, a.nextWait(c, now))
	case wire.StatusRelease:
		if c.member != "" && member != c.member {
			return nil // a member that never held it lets go of a re-ask's copy
		}
		c.state, c.member = stateAsking, ""
		a.arm(c, a.nextWait(c, now))
		return a.another(c, member, now)
	}
	return nil
}

// another is the ask to send again after member fell silent or let go: addressed to a
// live member not tried yet, else (none known) to the queue group. Callers hold mu.
func (a *Asker) another(c *call, member string, now time.Time) *nats.Msg {
	if a.cfg.Members == nil {
		return a.copyOf(c, c.subject, now)
	}
	if member != "" && !slices.Contains(c.tried, member) {
		c.tried = append(c.tried, member)
	}
	supervisor, _ := wire.ParseAskSubject(c.subject)
	var fresh []string
	for _, m := range a.cfg.Members(supervisor) {
		if !slices.Contains(c.tried, m) {
			fresh = append(fresh, m)
		}
	}
	if len(fresh) == 0 {
		c.tried = c.tried[:0] // every one tried: start over, through the queue group
		return a.copyOf(c, c.subject, now)
	}
	pick := fresh[rand.IntN(len(fresh))]
	c.tried = append(c.tried, pick)
	return a.copyOf(c, wire.AskMemberSubject(supervisor, pick), now)
}

func inc(c Counter) {
	if c != nil {
		c.Inc()
	}
}
