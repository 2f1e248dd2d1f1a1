package ask

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/wire"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

type count struct{ n atomic.Int64 }

func (c *count) Inc() { c.n.Add(1) }

// askFixture is a bus and an Asker with short windows that counts into plain counters.
type askFixture struct {
	nc                                    *nats.Conn
	asker                                 *Asker
	answered, reasked, duplicate, timeout *count
	withdrawn                             chan string // key and why of each OnWithdrawn
}

func newAskFixture(t *testing.T) *askFixture {
	f := &askFixture{answered: &count{}, reasked: &count{}, duplicate: &count{}, timeout: &count{}, withdrawn: make(chan string, 8)}
	f.nc = openBus(t).Conn
	f.asker = newAsker(t, f.nc, AskerConfig{AckTimeout: 200 * time.Millisecond, Silence: 300 * time.Millisecond,
		LateGrace: time.Second, Counters: AskCounters{Answered: f.answered, Reasked: f.reasked, Duplicate: f.duplicate, Timeout: f.timeout},
		OnWithdrawn: func(key, why string) { f.withdrawn <- key + " " + why }})
	return f
}

// openBus starts an embedded server and connects to it.
func openBus(t *testing.T) *bus.Bus {
	t.Helper()
	b, err := bus.Open(bus.Config{Listen: "127.0.0.1:0"}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// newAsker is an Asker on nc, closed when the test ends.
func newAsker(t *testing.T, nc *nats.Conn, cfg AskerConfig) *Asker {
	t.Helper()
	a, err := NewAsker(nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

// TestDeferredAskWithdrawn: an ask a person decides, given up on, is reported withdrawn
// with its key; one answered, or not deferred, is not.
func TestDeferredAskWithdrawn(t *testing.T) {
	f := newAskFixture(t)
	replies := make(chan string, 8)
	f.member(t, func(m *nats.Msg) {
		replies <- m.Reply
		if q, err := wire.DecodeAsk(m.Data); err == nil && q.Text == "person" {
			_ = SendStatus(f.nc, m.Reply, wire.StatusDeferred, "m1")
		}
	})
	ask := func(text string) (func(string), string) {
		settle := f.send(t, &wire.Ask{Text: text}, time.Now().Add(time.Minute), func(*wire.Reply) {})
		reply := <-replies
		return settle, reply[strings.LastIndexByte(reply, '.')+1:]
	}
	person, key := ask("person")
	proctest.Eventually(t, "the ask is deferred", func() bool {
		f.asker.mu.Lock()
		defer f.asker.mu.Unlock()
		return f.asker.calls[key].state == stateDeferred
	})
	person("cancelled: session ended")
	if got := <-f.withdrawn; got != key+" cancelled: session ended" {
		t.Fatalf("withdrawn %q", got)
	}
	answered, _ := ask("person")
	machine, _ := ask("rule")
	answered("")
	machine("timed_out: no answer")
	select {
	case got := <-f.withdrawn:
		t.Fatalf("withdrawn %q: answered or never deferred", got)
	case <-time.After(200 * time.Millisecond):
	}
}

// member subscribes to the ask subject and hands every copy of an ask to handle.
func (f *askFixture) member(t *testing.T, handle func(*nats.Msg)) {
	t.Helper()
	sub, err := f.nc.Subscribe(wire.AskSubject("s"), handle)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := f.nc.Flush(); err != nil {
		t.Fatal(err)
	}
}

// send asks q of supervisor s through the fixture's Asker.
func (f *askFixture) send(t *testing.T, q *wire.Ask, deadline time.Time, deliver func(*wire.Reply)) (settle func(string)) {
	t.Helper()
	settle, err := f.asker.Ask(wire.AskSubject("s"), q, nil, deadline, true, deliver)
	if err != nil {
		t.Fatal(err)
	}
	return settle
}

// ask asks an empty question and returns where its answers arrive and its settle.
func (f *askFixture) ask(t *testing.T, deadline time.Time) (chan *wire.Reply, func()) {
	answers := make(chan *wire.Reply, 8)
	settle := f.send(t, &wire.Ask{}, deadline, func(r *wire.Reply) { answers <- r })
	return answers, func() { settle("") }
}

func answer(t *testing.T, nc *nats.Conn, reply, value, member string) {
	t.Helper()
	data, _ := json.Marshal(&wire.Reply{Value: json.RawMessage(value), Decider: "test", Member: member})
	if err := nc.Publish(reply, data); err != nil {
		t.Fatal(err)
	}
}

func TestAskNotAcknowledgedIsAskedAgain(t *testing.T) {
	f := newAskFixture(t)
	var copies atomic.Int32
	f.member(t, func(m *nats.Msg) {
		if copies.Add(1) == 3 { // the first two copies vanish, as into a dead member
			answer(t, f.nc, m.Reply, `"third"`, "m3")
		}
	})
	answers, settle := f.ask(t, time.Now().Add(time.Minute))
	r := <-answers
	settle()
	if string(r.Value) != `"third"` || r.Member != "m3" || f.reasked.n.Load() != 2 || f.answered.n.Load() != 1 {
		t.Fatalf("answer %+v after %d re-asks (answered %d); want the third copy's, after 2", r, f.reasked.n.Load(), f.answered.n.Load())
	}
}

// TestEveryCopyCarriesTheTimeLeft: an ask says how long it has left when each copy is
// sent (timeout_ms), so a supervisor's deadline is its arrival plus that, on its own
// clock; a copy sent again says what is left then. The deadline by the asker's clock
// goes along for people and older supervisors.
func TestEveryCopyCarriesTheTimeLeft(t *testing.T) {
	f := newAskFixture(t)
	copies := make(chan *wire.Ask, 4)
	f.member(t, func(m *nats.Msg) {
		q, err := wire.DecodeAsk(m.Data)
		if err != nil {
			t.Error(err)
			return
		}
		copies <- q
		if len(copies) == 2 {
			answer(t, f.nc, m.Reply, `"second"`, "m2")
		}
	})
	deadline := time.Now().Add(time.Minute)
	answers, settle := f.ask(t, deadline)
	defer settle()
	<-answers
	first, second := <-copies, <-copies
	if first.Timeout > time.Minute.Milliseconds() || first.Timeout < (time.Minute-5*time.Second).Milliseconds() {
		t.Errorf("the first copy has %d ms left; want about a minute", first.Timeout)
	}
	// The second copy went out once the first was not acknowledged in AckTimeout.
	if gap := first.Timeout - second.Timeout; gap < 200 || gap > 5000 {
		t.Errorf("copies with %d and %d ms left; want the second sent the 200 ms ack timeout later", first.Timeout, second.Timeout)
	}
	if first.Deadline != deadline.UnixMilli() || second.Deadline != first.Deadline {
		t.Errorf("deadlines %d and %d; want %d on both", first.Deadline, second.Deadline, deadline.UnixMilli())
	}
}

// TestAskTooLargeIsNotSent: an ask the server would refuse is an error, and nothing is
// sent or kept.
func TestAskTooLargeIsNotSent(t *testing.T) {
	f := newAskFixture(t)
	f.member(t, func(*nats.Msg) { t.Error("a copy of an ask too large was sent") })
	text := strings.Repeat("x", int(f.nc.MaxPayload()))
	_, err := f.asker.Ask(wire.AskSubject("s"), &wire.Ask{Text: text}, nil, time.Now().Add(time.Minute), true, func(*wire.Reply) {})
	var tooLarge *TooLargeError
	if !errors.As(err, &tooLarge) || tooLarge.Size <= tooLarge.Limit || !strings.Contains(err.Error(), "the NATS server takes") {
		t.Fatalf("an ask of %d bytes: %v; want a TooLargeError", len(text), err)
	}
	f.asker.mu.Lock()
	defer f.asker.mu.Unlock()
	if len(f.asker.calls) != 0 {
		t.Fatalf("%d calls kept", len(f.asker.calls))
	}
}

func TestSilentMemberIsReplacedAndItsLateAnswerReported(t *testing.T) {
	f := newAskFixture(t)
	replies := make(chan string, 8)
	f.member(t, func(m *nats.Msg) {
		if err := SendStatus(f.nc, m.Reply, wire.StatusAck, "m1"); err != nil {
			t.Error(err)
		}
		replies <- m.Reply // acknowledged, then silent: no keep-alives
	})
	answers, settle := f.ask(t, time.Now().Add(time.Minute))
	first := <-replies
	second := <-replies // asked again after the silence window
	if first != second {
		t.Fatalf("a re-ask must keep the reply subject (%s, %s): members deduplicate by it", first, second)
	}
	answer(t, f.nc, second, `"from m2"`, "m2")
	r := <-answers
	settle()
	answer(t, f.nc, first, `"from m1, late"`, "m1")
	late := <-answers
	if string(r.Value) != `"from m2"` || late.Member != "m1" {
		t.Fatalf("first %+v, then %+v", r, late)
	}
	proctest.Eventually(t, "the late answer is counted", func() bool { return f.duplicate.n.Load() == 1 })
}

func TestKeptAliveAndDeferredAsksAreNotAskedAgain(t *testing.T) {
	f := newAskFixture(t)
	var copies atomic.Int32
	held := make(chan string, 8)
	f.member(t, func(m *nats.Msg) {
		copies.Add(1)
		held <- m.Reply
	})
	answers, settle := f.ask(t, time.Now().Add(time.Minute))
	defer settle()
	reply := <-held
	// notAgain fails the test if the ask reaches the member again within d.
	notAgain := func(d time.Duration, what string) {
		t.Helper()
		select {
		case <-held:
			t.Fatalf("asked again while %s", what)
		case <-time.After(d):
		}
	}
	// Keep it alive for two silence windows (keep-alives every 100 ms), then hand it to a
	// person and wait two more: a watched ask would be asked again in each.
	keepAlive := time.NewTicker(100 * time.Millisecond)
	defer keepAlive.Stop()
	for range 6 {
		if err := SendStatus(f.nc, reply, wire.StatusAlive, "m1"); err != nil {
			t.Fatal(err)
		}
		<-keepAlive.C
	}
	if err := SendStatus(f.nc, reply, wire.StatusDeferred, "m1"); err != nil {
		t.Fatal(err)
	}
	notAgain(600*time.Millisecond, "a person has it")
	answer(t, f.nc, reply, `"a person's"`, "m1")
	if r := <-answers; string(r.Value) != `"a person's"` {
		t.Fatalf("answer %+v", r)
	}
	if n := copies.Load(); n != 1 || f.reasked.n.Load() != 0 {
		t.Fatalf("the ask reached the member %d times, re-asked %d; want once, never", n, f.reasked.n.Load())
	}
}

func TestAskPastItsDeadlineCountsATimeout(t *testing.T) {
	f := newAskFixture(t)
	f.member(t, func(*nats.Msg) {})
	f.ask(t, time.Now().Add(100*time.Millisecond))
	_, withdraw := f.ask(t, time.Now().Add(100*time.Millisecond))
	withdraw() // settled before its deadline (the agent withdrew it): not a timeout
	proctest.Eventually(t, "both asks stop listening", func() bool {
		f.asker.mu.Lock()
		defer f.asker.mu.Unlock()
		return len(f.asker.calls) == 0
	})
	if f.timeout.n.Load() != 1 || f.answered.n.Load() != 0 {
		t.Fatalf("timeouts %d, answered %d; want the one unanswered ask counted", f.timeout.n.Load(), f.answered.n.Load())
	}
}

// TestOpenAsksAreAskedAgainAfterAReconnect: the server restarts while a member decides;
// its answer, sent while the asker was cut off, is lost, so the asker asks again once
// it is back, and the member's answer to the second copy arrives.
func TestOpenAsksAreAskedAgainAfterAReconnect(t *testing.T) {
	opts := &server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, NoLog: true, NoSigs: true}
	srv := proctest.Server(t, opts)
	url := srv.ClientURL()
	opts.Port = srv.Addr().(*net.TCPAddr).Port
	reasked := &count{}
	connect := func(name string) *nats.Conn {
		nc, err := nats.Connect(url, nats.Name(name), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	nc := connect("asker")
	asker := newAsker(t, nc, AskerConfig{Counters: AskCounters{Reasked: reasked}})
	nc.SetReconnectHandler(func(*nats.Conn) { asker.Reconnected() })
	member := connect("member")
	copies := make(chan *nats.Msg, 4)
	if _, err := member.Subscribe(wire.AskSubject("s"), func(m *nats.Msg) { copies <- m }); err != nil {
		t.Fatal(err)
	}
	if err := member.Flush(); err != nil {
		t.Fatal(err)
	}
	answers := make(chan *wire.Reply, 4)
	if _, err := asker.Ask(wire.AskSubject("s"), &wire.Ask{}, nil, time.Now().Add(time.Minute), true, func(r *wire.Reply) { answers <- r }); err != nil {
		t.Fatal(err)
	}
	first := <-copies
	if err := SendStatus(member, first.Reply, wire.StatusAck, "m1"); err != nil {
		t.Fatal(err)
	}
	srv.Shutdown()
	srv.WaitForShutdown()
	srv = proctest.Server(t, opts)
	second := <-copies // asked again after the reconnect
	answer(t, member, second.Reply, `"after the restart"`, "m1")
	if r := <-answers; string(r.Value) != `"after the restart"` || reasked.n.Load() < 1 {
		t.Fatalf("answer %+v after %d re-asks", r, reasked.n.Load())
	}
}

// TestSilentMemberIsPassedOverByName: the queue group keeps handing the ask to the same
// member (as NATS does for a member on the asker's own server) and that member hangs;
// the re-ask goes by name to a live member from the directory, which answers.
func TestSilentMemberIsPassedOverByName(t *testing.T) {
	reasked := &count{}
	b := openBus(t)
	asker := newAsker(t, b.Conn, AskerConfig{AckTimeout: 200 * time.Millisecond, Silence: 300 * time.Millisecond,
		Members: func(string) []string { return []string{"hung", "live"} }, Counters: AskCounters{Reasked: reasked}})
	hung := make(chan string, 8)
	for _, subject := range []string{wire.AskSubject("s"), wire.AskMemberSubject("s", "hung")} {
		if _, err := b.Conn.Subscribe(subject, func(m *nats.Msg) {
			_ = SendStatus(b.Conn, m.Reply, wire.StatusAck, "hung")
			hung <- m.Subject // and never a word more
		}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Conn.Subscribe(wire.AskMemberSubject("s", "live"), func(m *nats.Msg) { answer(t, b.Conn, m.Reply, `"live"`, "live") }); err != nil {
		t.Fatal(err)
	}
	if err := b.Conn.Flush(); err != nil {
		t.Fatal(err)
	}
	answers := make(chan *wire.Reply, 4)
	if _, err := asker.Ask(wire.AskSubject("s"), &wire.Ask{}, nil, time.Now().Add(time.Minute), true, func(r *wire.Reply) { answers <- r }); err != nil {
		t.Fatal(err)
	}
	if got := <-hung; got != wire.AskSubject("s") {
		t.Fatalf("first copy on %s; want the queue subject", got)
	}
	r := <-answers
	if r.Member != "live" || reasked.n.Load() != 1 {
		t.Fatalf("answer %+v after %d re-asks; want the live member's, after one", r, reasked.n.Load())
	}
}

// TestASupervisorNobodyRunsIsNotAskedOverAndOver: requests waiting for a supervisor
// nobody runs are each asked once; after that one ask per backoff finds out whether a
// member has started, not one per request. A member that starts gets every request
// still waiting.
func TestASupervisorNobodyRunsIsNotAskedOverAndOver(t *testing.T) {
	f := newAskFixture(t)
	noResponders := &count{}
	f.asker = newAsker(t, f.nc, AskerConfig{Counters: AskCounters{NoResponders: noResponders, Answered: f.answered}})
	const waiting = 40
	answers := make(chan *wire.Reply, waiting)
	deadline := time.Now().Add(10 * time.Second)
	for range waiting {
		f.send(t, &wire.Ask{}, deadline, func(r *wire.Reply) { answers <- r })
	}
	// Three rounds of backoff: before, each round asked every request again.
	proctest.Eventually(t, "three rounds of asking nobody", func() bool { return noResponders.n.Load() >= waiting+3 })
	f.member(t, func(m *nats.Msg) { answer(t, f.nc, m.Reply, `"late but there"`, "m1") })
	for i := range waiting {
		select {
		case r := <-answers:
			if string(r.Value) != `"late but there"` {
				t.Fatalf("answer %d: %+v", i, r)
			}
		case <-time.After(time.Until(deadline)):
			t.Fatalf("%d of %d requests answered by the member that started; want all", i, waiting)
		}
	}
	if n := noResponders.n.Load(); n > waiting+10 {
		t.Fatalf("%d asks found nobody for %d requests; want each asked once, and about one more per round", n, waiting)
	}
}

// TestCallsFallingDueTogetherAreSweptTogether: a member answers 400 asks whose
// deadlines are a millisecond apart; each then waits out its late-answer window past
// its deadline, so they fall due a millisecond apart. The Asker wakes for them about
// once per sweepSlack, not once each.
func TestCallsFallingDueTogetherAreSweptTogether(t *testing.T) {
	f := newAskFixture(t)
	a := newAsker(t, f.nc, AskerConfig{LateGrace: 100 * time.Millisecond})
	var sweeps atomic.Int32
	a.mu.Lock()
	a.wake.Stop()
	a.wake = time.AfterFunc(time.Hour, func() { sweeps.Add(1); a.sweep() })
	a.wake.Stop()
	a.mu.Unlock()
	f.member(t, func(m *nats.Msg) { answer(t, f.nc, m.Reply, `"yes"`, "m1") })
	const asks = 400
	answered := make(chan struct{}, asks)
	begun := time.Now()
	for i := range asks {
		if _, err := a.Ask(wire.AskSubject("s"), &wire.Ask{}, nil, begun.Add(time.Duration(i)*time.Millisecond+200*time.Millisecond), true,
			func(*wire.Reply) { answered <- struct{}{} }); err != nil {
			t.Fatal(err)
		}
		<-answered
	}
	proctest.Eventually(t, "every call swept away", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return len(a.calls) == 0
	})
	// The calls fall due over about 400 ms: about 20 sweeps of 20 ms, and a few more
	// for the ones still waiting when the first came due.
	if n, most := sweeps.Load(), int32(2*(400*time.Millisecond/(20*time.Millisecond))); n > most {
		t.Fatalf("%d sweeps for %d calls falling due over 400 ms; want at most %d", n, asks, most)
	}
}
