package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// pipelineManifest is a node on its own store with pipelineBody.
func pipelineManifest(t *testing.T, dir string, think time.Duration) (path, url, coderMark, testerMark string) {
	t.Helper()
	port := proctest.FreePort(t)
	body, coderMark, testerMark := pipelineBody(think)
	// The test reads the audit as a node user (the CLI is that user too).
	m := fmt.Sprintf(`[nats]
listen = "127.0.0.1:%d"
store_dir = %q
user = "tester"
password_env = "AGENTMUX_TEST_FLEET_PASSWORD"
[[nats.users]]
name = "tester"
password_env = "AGENTMUX_TEST_FLEET_PASSWORD"
role = "node"
[metrics]
addr = "127.0.0.1:0"
`, port, filepath.Join(dir, "store")) + body
	path = filepath.Join(dir, "agentmux.toml")
	if err := os.WriteFile(path, []byte(m), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, fmt.Sprintf("nats://127.0.0.1:%d", port), coderMark, testerMark
}

// pipelineBody is two sim hosts, each marked so a test can see when its agent runs, and
// a two-stage pipeline whose second stage thinks for think.
func pipelineBody(think time.Duration) (body, coderMark, testerMark string) {
	coderMark, testerMark = nuid.Next(), nuid.Next()
	host := func(name, mark string) string {
		return fmt.Sprintf("[hosts.%s]\ncommand = %q\nargs = [\"sim\"]\nenv = { AGENTMUX_RUNTIME_MAIN = \"1\", AGENTMUX_TEST_MARK = %q }\nstop_grace = \"1s\"\n", name, os.Args[0], mark)
	}
	body = fmt.Sprintf(`%s%s
[supervisors.architect]
strategy = "static"
answers = { question = "keep it small" }

[pipelines.build_and_test]
params = ["spec"]

[[pipelines.build_and_test.stages]]
name = "implement"
host = "coder"
prompt = '{"steps":[{"send":{"type":"question","id":"q","question":"How to build ${spec}?"}},{"await":"q"},{"result":"built ${spec}"}]}'
routes = [{ type = "question", supervisor = "architect" }]

[[pipelines.build_and_test.stages]]
name = "test"
host = "tester"
prompt = '{"steps":[{"send":{"type":"question","id":"s","question":"Which suite?"}},{"await":"s"},{"sleep":"%s"},{"result":"{\"passed\": true, \"of\": \"${implement}\"}"}]}'
routes = [{ type = "question", supervisor = "architect" }]
result_schema = { type = "object", required = ["passed"] }
`, host("coder", coderMark), host("tester", testerMark), think)
	return body, coderMark, testerMark
}

func TestRunPipelineCLI(t *testing.T) {
	t.Parallel()
	manifest, _, _, _ := pipelineManifest(t, t.TempDir(), 10*time.Millisecond)
	p := runtimeProc(t, "run", "-c", manifest, "--events", "build_and_test", "spec=the login page")
	if code := p.wait(t, 60*time.Second); code != exitOK {
		t.Fatalf("run: exit %d\n%s", code, p.stderr)
	}
	var run wire.PipelineRun
	if err := json.Unmarshal([]byte(p.stdout.String()), &run); err != nil {
		t.Fatalf("stdout is not a pipeline run: %v\n%s", err, p.stdout)
	}
	if run.Outcome != "ok" || run.Stages[0].Text != "built the login page" || string(run.Stages[1].Data) != `{"passed":true,"of":"built the login page"}` {
		t.Fatalf("run: %s", p.stdout)
	}
	for _, ev := range []string{`.pipeline.stage.started"`, `.pipeline.ended"`, `"subject":"agentmux.evt.coder.` + run.ID + `-implement.question"`} {
		if !strings.Contains(p.stderr.String(), ev) {
			t.Errorf("no %s event on stderr:\n%s", ev, p.stderr)
		}
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"build_and_test"}, exitUsage, "pipeline build_and_test needs spec=…; its params are spec"},
		{[]string{"build_and_test", "spec=x", "speed=3"}, exitUsage, `"speed=3" is not a param of pipeline build_and_test`},
		{[]string{"build_and_test", "login page"}, exitUsage, `"login page" is not a param`},
	} {
		code, _, stderr := runCLI(append([]string{"run", "-c", manifest}, c.args...)...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("run %v: exit %d, %q; want exit %d saying %q", c.args, code, stderr, c.code, c.want)
		}
	}
}

// checkResumed checks a resumed run's audit: the implement stage started once, the test
// stage twice, and the test stage's question answered by the supervisor the first time
// and replayed from that answer the second.
func checkResumed(t *testing.T, js jetstream.JetStream) {
	t.Helper()
	started := map[string]int{}
	var deciders []string
	for _, r := range auditRecords(t, js) {
		switch {
		case r.Kind == "session.started" && r.Pipeline == "build_and_test":
			started[r.Stage]++
		case r.Kind == "answer" && r.Stage == "test":
			deciders = append(deciders, r.Decider)
		}
	}
	if started["implement"] != 1 || started["test"] != 2 {
		t.Errorf("session starts by stage %v; want implement once, test twice", started)
	}
	if strings.Join(deciders, " ") != "static:architect replay:static:architect" {
		t.Errorf("the test stage's answers were decided by %q; want the supervisor, then a replay of its answer", deciders)
	}
}

// stageAsked waits until the test stage's answer is in the audit: the run is in its
// second stage, past its question.
func stageAsked(t *testing.T, js jetstream.JetStream) {
	t.Helper()
	proctest.EventuallyWithin(t, 40*time.Second, "the second stage's question answered", func() bool {
		records, err := readFleetAudit(js)
		if err != nil {
			return false
		}
		for _, r := range records {
			if r.Kind == "answer" && r.Stage == "test" {
				return true
			}
		}
		return false
	})
}

// TestPipelineResumesAfterNodeKilled: the node running a pipeline is killed with SIGKILL
// during the second stage; restarted on its store, it resumes the run at the second
// stage, and the first stage is not run again.
func TestPipelineResumesAfterNodeKilled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	manifest, url, coderMark, testerMark := pipelineManifest(t, dir, 3*time.Second)
	up := runtimeProc(t, "up", "-c", manifest)
	until(t, "agentmux up", up.stderr, "node up")
	sub := runtimeProc(t, "submit", "-c", manifest, "--id", "p-resume", "build_and_test", "spec=checkout")
	if code := sub.wait(t, 30*time.Second); code != exitOK {
		t.Fatalf("submit: exit %d\n%s", code, sub.stderr)
	}
	// The test's connection outlives the node: it reconnects to the restarted one.
	nc, err := bus.Connect(bus.Client{URL: url, Name: "pipeline-test", Identity: bus.Identity{User: "tester", Password: os.Getenv("AGENTMUX_TEST_FLEET_PASSWORD")}},
		nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stageAsked(t, js)
	if len(proctest.Marked(testerMark)) == 0 {
		t.Fatal("the second stage's agent is not running; the test kills the node during that stage")
	}
	kill(t, up)
	proctest.EventuallyWithin(t, 5*time.Second, "the agents gone with the node", func() bool {
		return len(proctest.Marked(testerMark))+len(proctest.Marked(coderMark)) == 0
	})
	again := runtimeProc(t, "up", "-c", manifest, "--log", "info")
	until(t, "agentmux up again", again.stderr, "node up")
	runs, err := store.OpenPipelines(context.Background(), js)
	if err != nil {
		t.Fatal(err)
	}
	var run *wire.PipelineRun
	proctest.EventuallyWithin(t, 60*time.Second, "the run ended on the restarted node", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		run, _, err = runs.Get(ctx, "p-resume")
		return err == nil && run != nil && run.Outcome != ""
	})
	impl, test := run.Stages[0], run.Stages[1]
	if run.Outcome != "ok" || impl.Attempts != 1 || test.Attempts != 2 || string(test.Data) != `{"passed":true,"of":"built checkout"}` {
		t.Fatalf("run %+v; implement %+v; test %+v: want the test stage resumed once and the implement stage run once", run, impl, test)
	}
	if !strings.Contains(again.stderr.String(), "resuming pipeline run") {
		t.Errorf("the restarted node did not say it resumed the run:\n%s", again.stderr)
	}
	checkResumed(t, js)
}

// TestFleetPipelineResumesOnAnotherNode: of two agent nodes, the one running a
// pipeline's second stage is killed with SIGKILL; the other resumes the run at that
// stage, and the first stage is not run again.
func TestFleetPipelineResumesOnAnotherNode(t *testing.T) {
	t.Parallel()
	body, _, _ := pipelineBody(3 * time.Second)
	f := startFleet(t, body)
	nodes := map[string]*proc{"a1": f.node(t, "a1"), "a2": f.node(t, "a2")}
	_, js := f.conn(t)
	runs, err := store.OpenPipelines(context.Background(), js)
	if err != nil {
		t.Fatal(err)
	}
	follow := runtimeProc(t, "submit", "-c", f.manifest, "--id", "p-fleet", "--follow", "build_and_test", "spec=checkout")
	get := func() *wire.PipelineRun {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		run, _, err := runs.Get(ctx, "p-fleet")
		if err != nil {
			return nil
		}
		return run
	}
	stageAsked(t, js)
	run := get()
	if run == nil || run.Stages[1].Outcome != wire.StageRunning {
		t.Fatalf("run %+v; want its second stage running", run)
	}
	victim := run.Stages[1].Node
	kill(t, nodes[victim])
	killed := time.Now()
	proctest.EventuallyWithin(t, 60*time.Second, "the run ended on the other node", func() bool {
		run = get()
		return run != nil && run.Outcome != ""
	})
	t.Logf("the run ended %v after its node was killed", time.Since(killed).Round(100*time.Millisecond))
	if code := follow.wait(t, 30*time.Second); code != exitOK {
		t.Fatalf("submit --follow: exit %d\n%s", code, follow.stderr)
	}
	var followed wire.PipelineRun
	if err := json.Unmarshal([]byte(follow.stdout.String()), &followed); err != nil || followed.Outcome != "ok" || followed.ID != "p-fleet" {
		t.Fatalf("submit --follow printed %s (%v); want the ended run", follow.stdout, err)
	}
	if !strings.Contains(follow.stderr.String(), `"subject":"agentmux.evt.build_and_test.p-fleet.pipeline.stage.started"`) {
		t.Errorf("submit --follow printed no stage events:\n%s", follow.stderr)
	}
	impl, test := run.Stages[0], run.Stages[1]
	if run.Outcome != "ok" || run.Node == victim || test.Node == victim || impl.Attempts != 1 || test.Attempts != 2 {
		t.Fatalf("run %+v; implement %+v; test %+v: want the test stage resumed on the node that was not killed (%s was)", run, impl, test, victim)
	}
	checkResumed(t, js)
}
