package pipeline

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentmux/agentmux/actors/agent"
	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/internal/bustest"
	"github.com/agentmux/agentmux/internal/routines"
	"github.com/agentmux/agentmux/metrics"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

const manifest = `
[hosts.coder]
command = "x"
retries = 1
[hosts.tester]
command = "x"
[pipelines.bt]
params = ["spec"]
[[pipelines.bt.stages]]
name = "implement"
host = "coder"
prompt = "Implement: ${spec}"
[[pipelines.bt.stages]]
name = "test"
host = "tester"
prompt = "Test: ${implement}"
`

// parent stands in for the router: it spawns the run, hands its stage requests and its
// end to the test.
type parent struct {
	cfg    Config
	stages chan *RunStage
	ended  chan *Ended
}

func (p *parent) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		c.Spawn(Props(p.cfg))
	case *RunStage:
		p.stages <- m
	case *Ended:
		p.ended <- m
	}
}

type fixture struct {
	t      *testing.T
	system *actor.ActorSystem
	runs   *store.PipelineStore
	m      *metrics.Set
	p      *parent
	group  *routines.Group
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	b := bustest.Open(t, "pipeline-test", log)
	runs, err := store.OpenPipelines(context.Background(), b.JS)
	if err != nil {
		t.Fatal(err)
	}
	m, err := config.Parse("m.toml", []byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return log }))
	f := &fixture{t: t, system: system, runs: runs, m: metrics.New(), group: routines.New()}
	f.p = &parent{stages: make(chan *RunStage, 4), ended: make(chan *Ended, 1), cfg: Config{Pipeline: m.Pipelines["bt"], Hosts: m.Hosts,
		ID: "p-1", Params: map[string]string{"spec": "login"}, Store: runs,
		Env: agent.NewEnv(agent.Env{Node: "n1", Conn: b.Conn, Metrics: f.m, Log: log, Routines: f.group})}}
	t.Cleanup(func() {
		system.Shutdown()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := f.group.Stop(ctx); err != nil {
			t.Error(err)
		}
	})
	return f
}

func (f *fixture) start() {
	f.system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return f.p }))
}

func (f *fixture) stage() *RunStage {
	f.t.Helper()
	select {
	case s := <-f.p.stages:
		return s
	case e := <-f.p.ended:
		f.t.Fatalf("the run ended (%+v) instead of starting a stage", e)
	case <-time.After(10 * time.Second):
		f.t.Fatal("no stage started")
	}
	return nil
}

func (f *fixture) ended() *Ended {
	f.t.Helper()
	select {
	case e := <-f.p.ended:
		return e
	case s := <-f.p.stages:
		f.t.Fatalf("stage %s started; want the run to end", s.Start.Stage)
	case <-time.After(10 * time.Second):
		f.t.Fatal("the run did not end")
	}
	return nil
}

func (f *fixture) stored() *wire.PipelineRun {
	f.t.Helper()
	run, _, err := f.runs.Get(context.Background(), "p-1")
	if err != nil || run == nil {
		f.t.Fatalf("stored run: %v %v", run, err)
	}
	return run
}

func (f *fixture) put(run *wire.PipelineRun) {
	f.t.Helper()
	_, rev, _ := f.runs.Get(context.Background(), run.ID)
	if _, err := f.runs.Put(context.Background(), run, rev); err != nil {
		f.t.Fatal(err)
	}
}

func TestStagesRunInTurnAndAreRecorded(t *testing.T) {
	f := newFixture(t)
	f.start()
	s := f.stage()
	if s.Host != "coder" || s.Start.Prompt != "Implement: login" || s.Start.Session != "p-1-implement" || s.Start.Attempt != 0 ||
		s.Start.Pipeline != "bt" || s.Start.Stage != "implement" || s.Start.Notify == nil {
		t.Fatalf("first stage %+v %+v", s, s.Start)
	}
	if st := f.stored().Stages[0]; st.Outcome != wire.StageRunning || st.Attempts != 1 || st.Node != "n1" {
		t.Fatalf("stored before the stage ran: %+v; want it running, once", st)
	}
	f.system.Root.Send(s.Start.Notify, &agent.Result{Session: s.Start.Session, OK: true, Text: "built login.go"})
	s = f.stage()
	if s.Host != "tester" || s.Start.Prompt != "Test: built login.go" {
		t.Fatalf("second stage %+v", s.Start)
	}
	f.system.Root.Send(s.Start.Notify, &agent.Result{Session: s.Start.Session, OK: true, Data: json.RawMessage(`{"passed":true}`)})
	e := f.ended()
	if e.Lost || e.Yielded || e.Err != nil || e.Run.Outcome != "ok" || string(e.Run.Stages[1].Data) != `{"passed":true}` {
		t.Fatalf("ended %+v %+v", e, e.Run)
	}
	if run := f.stored(); run.Outcome != "ok" || run.Stages[0].Text != "built login.go" || run.Ended == 0 {
		t.Fatalf("stored %+v", run)
	}
}

func TestAFailedStageEndsTheRun(t *testing.T) {
	f := newFixture(t)
	f.start()
	s := f.stage()
	f.system.Root.Send(s.Start.Notify, &agent.Result{Session: s.Start.Session, Error: "agent exited without result (exit status 3)"})
	e := f.ended()
	if e.Run.Outcome != "error" || e.Run.Error != `stage "implement" failed: agent exited without result (exit status 3)` || e.Run.Stages[1].Outcome != wire.StagePending {
		t.Fatalf("ended %+v", e.Run)
	}
}

// A run whose node died mid-stage resumes at that stage, as a new attempt numbered past
// the host's retries, with the earlier stages' results.
func TestResumesAtTheRunningStage(t *testing.T) {
	f := newFixture(t)
	f.put(&wire.PipelineRun{ID: "p-1", Pipeline: "bt", Params: map[string]string{"spec": "login"}, Node: "gone", Stages: []*wire.StageRun{
		{Name: "implement", Host: "coder", Outcome: wire.StageRunning, Attempts: 1, Node: "gone"},
		{Name: "test", Host: "tester", Outcome: wire.StagePending},
	}})
	f.start()
	s := f.stage()
	if s.Start.Stage != "implement" || s.Start.Attempt != 2 {
		t.Fatalf("resumed %+v; want implement again as attempt 2 (retries 1: attempts 0 and 1 were the first start's)", s.Start)
	}
	if v := testutil.ToFloat64(f.m.PipelineStages.WithLabelValues("bt", "implement", "resumed")); v != 1 {
		t.Errorf("resumed = %v", v)
	}
	if run := f.stored(); run.Node != "n1" || run.Stages[0].Attempts != 2 {
		t.Fatalf("stored %+v %+v", run, run.Stages[0])
	}
}

func TestAnEndedRunIsNotRunAgain(t *testing.T) {
	f := newFixture(t)
	f.put(&wire.PipelineRun{ID: "p-1", Pipeline: "bt", Outcome: "ok", Node: "n0", Stages: []*wire.StageRun{
		{Name: "implement", Host: "coder", Outcome: wire.StageOK, Attempts: 1}, {Name: "test", Host: "tester", Outcome: wire.StageOK, Attempts: 1},
	}})
	f.start()
	if e := f.ended(); e.Run.Outcome != "ok" || e.Run.Node != "n0" {
		t.Fatalf("ended %+v", e.Run)
	}
}

func TestARunChangedByAnotherNodeStopsHere(t *testing.T) {
	f := newFixture(t)
	f.start()
	s := f.stage()
	taken := f.stored()
	taken.Node = "n2"
	f.put(taken)
	f.system.Root.Send(s.Start.Notify, &agent.Result{Session: s.Start.Session, OK: true, Text: "built"})
	if e := f.ended(); !e.Lost {
		t.Fatalf("ended %+v; want lost to the other node", e)
	}
	if run := f.stored(); run.Node != "n2" || run.Stages[0].Outcome != wire.StageRunning {
		t.Fatalf("the other node's record was overwritten: %+v", run)
	}
}

func TestYieldHandsTheRunOnAtTheStagesEnd(t *testing.T) {
	f := newFixture(t)
	f.start()
	s := f.stage()
	f.system.Root.Send(s.Start.Notify, &Yield{})
	f.system.Root.Send(s.Start.Notify, &agent.Result{Session: s.Start.Session, OK: true, Text: "built"})
	if e := f.ended(); !e.Yielded {
		t.Fatalf("ended %+v; want yielded", e)
	}
	if run := f.stored(); run.Outcome != "" || run.Stages[0].Outcome != wire.StageOK || run.Stages[1].Outcome != wire.StagePending {
		t.Fatalf("stored %+v %+v %+v; want the first stage done and the second for the next node", run, run.Stages[0], run.Stages[1])
	}
}

// A stage started again is told of its earlier attempt, read from the audit.
func TestAResumedStageIsToldOfItsEarlierAttempt(t *testing.T) {
	f := newFixture(t)
	f.p.cfg.ReadAudit = func(_ context.Context, session string) ([]*wire.AuditRecord, error) {
		if session != "p-1-implement" {
			t.Errorf("read the audit of %s", session)
		}
		return []*wire.AuditRecord{
			{Kind: "request", Session: session, Request: "q", Type: "question", Text: "Which db?"},
			{Kind: "answer", Session: session, Request: "q", Value: json.RawMessage(`"sqlite"`), Outcome: "answered", Decider: "static:architect"},
		}, nil
	}
	f.put(&wire.PipelineRun{ID: "p-1", Pipeline: "bt", Params: map[string]string{"spec": "login"}, Stages: []*wire.StageRun{
		{Name: "implement", Host: "coder", Outcome: wire.StageRunning, Attempts: 1, Session: "p-1-implement"},
		{Name: "test", Host: "tester", Outcome: wire.StagePending},
	}})
	f.start()
	prev := f.stage().Start.Previous
	if prev == nil || len(prev.Requests) != 1 || prev.Requests[0].Text != "Which db?" || prev.Requests[0].Decider != "static:architect" ||
		prev.Error != "the node running it was gone before it ended" {
		t.Fatalf("previous %+v", prev)
	}
}
