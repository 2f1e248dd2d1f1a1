package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmux/agentmux/internal/pipe"
	"github.com/agentmux/agentmux/protocol"
	"github.com/agentmux/agentmux/sim"
	"github.com/agentmux/agentmux/wire"
)

// The supervisors B1 and B1a ask. B1's, a trivial responder, answers on a connection
// of its own, as a supervisor elsewhere would; B1a's reads each request and answers by
// its rule (decisions.supervise) on B1a's own connection, as a node's supervisors
// answer on the node's: the floor does no more work than a node does, and no less.
const (
	b1Subject  = "agentmux.bench.answer"
	b1aSubject = "agentmux.bench.answer.b1a"
)

// harness is the baseline a team would write without agentmux: pipes, framing and
// decoding, questions answered inline (B0); with nc set, also every message published
// and a NATS request per question (B1); with trail set too, agentmux's audit records
// (B1a). With peer set instead, the peer answers every request (RunPeer).
type harness struct {
	c     *Config
	nc    *nats.Conn
	trail *auditTrail
	peer  Peer
	// prefix begins every session's name, before its number: "b-" when empty.
	prefix string
	// ask is the subject its requests go to: b1Subject when empty.
	ask string
	// decide, set for B1a, does with each request what a node does besides writing it
	// down.
	decide *decisions
}

// run runs the scenario's sessions on the arrival schedule.
func (h *harness) run(ctx context.Context, name string, progress Progress) (*System, error) {
	col := newCollector(name)
	var mu sync.Mutex
	var wg sync.WaitGroup
	prompt := h.c.plan().Prompt()
	var pids []int
	if h.peer != nil {
		pids = h.peer.Processes()
	}
	servers, err := processesUsage(pids)
	if err != nil {
		return nil, fmt.Errorf("%s's processes: %w", name, err)
	}
	before := readUsage()
	t0 := time.Now()
	done := 0
	for i := range h.c.Sessions {
		if err := sleepUntil(ctx, h.c.arrival(t0, i)); err != nil {
			return nil, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := cmp.Or(h.prefix, "b-") + strconv.Itoa(i)
			if h.trail != nil {
				id = wire.NewSessionID() // its records name sessions as a node's do
			}
			rep, err := h.session(ctx, id, prompt)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				col.fail(err.Error())
			} else {
				col.add(rep)
			}
			done++
			progress(name, done, h.c.Sessions)
		}()
	}
	wg.Wait()
	wall := time.Since(t0)
	u := readUsage().since(before)
	after, err := processesUsage(pids)
	if err != nil {
		return nil, fmt.Errorf("%s's processes: %w", name, err)
	}
	u.cpu += after.cpu - servers.cpu
	s := col.system(wall, u)
	if h.peer != nil {
		s.ServersCPU, s.ServersRSS = after.cpu-servers.cpu, after.rss
	}
	switch {
	case h.trail != nil:
		err = h.trail.flush(ctx)
		if err == nil {
			s.Durable, err = h.trail.stored(ctx)
		}
	case h.peer != nil:
		dctx, cancel := context.WithTimeout(ctx, peerDurableWait)
		s.Durable, err = h.peer.Durable(dctx, cmp.Or(h.prefix, "b-"))
		cancel()
	}
	switch {
	case err != nil && s.Failed > 0:
		return nil, fmt.Errorf("%s: %d sessions failed (first errors: %v), and its durable answers could not be counted: %w", name, s.Failed, s.Errors, err)
	case err != nil:
		return nil, fmt.Errorf("%s's durable answers: %w", name, err)
	}
	return s, nil
}

// session runs one agent through one load plan.
func (h *harness) session(ctx context.Context, id, prompt string) (rep *sim.LoadReport, err error) {
	if h.peer != nil {
		if err := h.peer.Begin(ctx, id); err != nil {
			return nil, fmt.Errorf("begin the session: %w", err)
		}
		defer func() {
			if e := h.peer.End(ctx, id, err); e != nil && err == nil {
				rep, err = nil, fmt.Errorf("end the session: %w", e)
			}
		}()
	}
	var result []byte // the result line, for B1a's records of the end
	if h.trail != nil {
		began := time.Now()
		h.trail.started(id, prompt)
		defer func() { h.trail.ended(id, began, result, err) }()
	}
	in, out, wait, err := h.start()
	if err != nil {
		return nil, err
	}
	defer func() {
		in.Close()
		_ = wait()
	}()
	var wmu sync.Mutex
	write := func(b []byte) {
		wmu.Lock()
		defer wmu.Unlock()
		_, _ = in.Write(b)
	}
	write(protocol.AppendPrompt(nil, prompt, id))
	r := protocol.NewReader(out, 1<<20)
	var pending sync.WaitGroup
	defer pending.Wait()
	// A request the peer could not answer fails the session: its agent's stdin is
	// closed, so the agent stops waiting for the answer.
	failed := make(chan error, 1)
	fail := func(err error) {
		select {
		case failed <- err:
			in.Close()
		default:
		}
	}
	for {
		line, err := r.Next()
		if err != nil {
			select {
			case err := <-failed:
				return nil, err
			default:
			}
			return nil, fmt.Errorf("agent stdout: %w", err)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		m, err := protocol.Decode(line, protocol.PlainTextResult)
		if err != nil {
			continue
		}
		if h.nc != nil {
			_ = h.nc.Publish("agentmux.evt.load."+id+"."+string(m.Type), m.Raw)
		}
		switch m.Type {
		case protocol.TypeResult:
			var p struct {
				Load *sim.LoadReport `json:"load"`
			}
			if err := json.Unmarshal(m.Raw, &p); err != nil || p.Load == nil {
				return nil, fmt.Errorf("result without a load report")
			}
			p.Load.ReceivedNS = time.Now().UnixNano()
			result = m.Raw
			return p.Load, nil
		case protocol.TypeError:
			return nil, errors.New(m.Message)
		case protocol.TypeQuestion, protocol.TypeApproval:
			h.answer(ctx, id, m, write, fail, &pending)
		}
	}
}

// answer answers a request: inline (B0), after a NATS request (B1), or by the peer;
// unrouted questions get their default when their timeout fires, as the runtime's
// would (a peer records it). B1a (decide set) also asks an unrouted question of its
// route's supervisor, whom nobody runs, checks each answer against its request and
// counts each request.
func (h *harness) answer(ctx context.Context, session string, m *protocol.Message, write func([]byte), fail func(error), pending *sync.WaitGroup) {
	var read time.Time // when B1a's records and metrics say it was read
	if h.trail != nil || h.decide != nil {
		read = time.Now()
	}
	resp := protocol.Response{InReplyTo: m.Type, ID: m.ID, Value: json.RawMessage(`"unit"`), Outcome: protocol.OutcomeAnswered}
	if m.Type == protocol.TypeApproval {
		resp.Value = json.RawMessage(`"yes"`)
	}
	// finish writes resp, decided by decider, and records it.
	finish := func(decider string, recorded bool) {
		write(protocol.AppendResponse(nil, resp))
		if h.trail != nil {
			h.trail.answered(session, m, &resp, decider, read, recorded)
		}
		if h.decide != nil {
			h.decide.count(m, resp.Outcome, decider, time.Since(read))
		}
	}
	if m.Timeout > 0 {
		timeout := time.Duration(m.Timeout) * time.Millisecond
		resp.Value, resp.Outcome = json.RawMessage(`"skip"`), protocol.OutcomeTimedOut
		if h.trail != nil {
			h.trail.requested(session, m)
		}
		var settled atomic.Bool // by an answer, or by the default at the timeout
		if h.decide != nil {
			pending.Add(1)
			go func() {
				defer pending.Done()
				reply, err := h.nc.Request(b1aNobody, m.Raw, timeout)
				h.decide.asked(err)
				if err == nil && settled.CompareAndSwap(false, true) {
					resp.Value, resp.Outcome, resp.Reason = h.decide.check(m, reply.Data, resp.Value)
					finish("rule:b1", true)
				}
			}()
		}
		pending.Add(1)
		time.AfterFunc(timeout, func() {
			defer pending.Done()
			if !settled.CompareAndSwap(false, true) {
				return
			}
			if h.peer != nil {
				if _, err := h.peer.Ask(ctx, session, m, resp.Value); err != nil {
					fail(fmt.Errorf("request %s's default: %w", m.ID, err))
					return
				}
			}
			finish("default", true)
		})
		return
	}
	if h.nc == nil && h.peer == nil {
		write(protocol.AppendResponse(nil, resp))
		return
	}
	decider := "rule:b1"
	pending.Add(1)
	go func() {
		defer pending.Done()
		if h.peer != nil {
			v, err := h.peer.Ask(ctx, session, m, nil)
			if err != nil {
				fail(fmt.Errorf("request %s: %w", m.ID, err))
				return
			}
			resp.Value = v
		} else {
			reply, err := h.nc.Request(cmp.Or(h.ask, b1Subject), m.Raw, h.c.QuestionTimeout+time.Second)
			if h.decide != nil {
				h.decide.asked(err)
			}
			switch {
			case h.decide != nil && err != nil:
				resp.Outcome, resp.Reason, decider = protocol.OutcomeTimedOut, err.Error(), "default"
			case h.decide != nil:
				resp.Value, resp.Outcome, resp.Reason = h.decide.check(m, reply.Data, resp.Value)
			case err == nil:
				resp.Value = reply.Data
			}
		}
		finish(decider, false)
	}()
}

// start starts one agent: a process, or sim.Run on in-memory pipes in this process.
func (h *harness) start() (io.WriteCloser, io.Reader, func() error, error) {
	if h.c.Agent == AgentProcess {
		cmd := exec.Command(h.c.AgentCommand[0], h.c.AgentCommand[1:]...)
		cmd.Env = agentEnv(h.c)
		in, err := cmd.StdinPipe()
		if err != nil {
			return nil, nil, nil, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return nil, nil, nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, nil, nil, fmt.Errorf("start the agent: %w", err)
		}
		return in, out, cmd.Wait, nil
	}
	// In-memory pipes that buffer as the kernel's do, as a node's in-process agents
	// have (agent.InProc): the same agents on the same pipes, so neither side pays for
	// its pipes what the other does not.
	inR, inW := pipe.New(pipe.Size)
	outR, outW := pipe.New(pipe.Size)
	done := make(chan error, 1)
	go func() {
		err := sim.Run(inR, outW, sim.Options{})
		outW.Close()
		inR.Close()
		done <- err
	}()
	return inW, outR, func() error {
		err := <-done
		outR.Close()
		return err
	}, nil
}

// responder answers B1's and B2's requests at once, as a trivial supervisor.
func responder(nc *nats.Conn, subject string) (*nats.Subscription, error) {
	sub, err := nc.Subscribe(subject, func(m *nats.Msg) { _ = m.Respond([]byte(`"unit"`)) })
	if err != nil {
		return nil, err
	}
	return sub, nc.Flush()
}

// runB2 is bare request round trips on the same server, on the scenario's request
// schedule: the floor for any answer that crosses NATS.
func runB2(ctx context.Context, c *Config, nc *nats.Conn, progress Progress) (*System, error) {
	col := newCollector("B2")
	perSession := c.Questions + c.Approvals
	var mu sync.Mutex
	var wg sync.WaitGroup
	before := readUsage()
	t0 := time.Now()
	done := 0
	for i := range c.Sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := c.arrival(t0, i)
			rep := &sim.LoadReport{Outcomes: map[string]int{}}
			for j := range perSession {
				at := start.Add(time.Duration(j+1) * c.Think)
				if wait := time.Until(at); wait > 0 {
					time.Sleep(wait) // the open-loop schedule, as the agents keep it
				}
				rep.LagUS = append(rep.LagUS, time.Since(at).Microseconds())
				if _, err := nc.Request(b1Subject, []byte(`{"type":"question"}`), c.QuestionTimeout+time.Second); err != nil {
					rep.Missing++
					continue
				}
				rep.QuestionsUS = append(rep.QuestionsUS, time.Since(at).Microseconds())
				rep.Outcomes["answered"]++
			}
			mu.Lock()
			defer mu.Unlock()
			col.add(rep)
			done++
			progress("B2", done, c.Sessions)
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return col.system(time.Since(t0), readUsage().since(before)), nil
}

// agentEnv is the environment of agents the baselines start: this process's, and the
// scenario's additions.
func agentEnv(c *Config) []string {
	env := os.Environ()
	for k, v := range c.AgentEnv {
		env = append(env, k+"="+v)
	}
	return env
}
