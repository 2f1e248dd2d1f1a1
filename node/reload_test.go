package node

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/wire"
)

// parsed is manifest as the fixture's node would read it, marked like its own.
func (f *fixture) parsed(manifest string) *config.Manifest {
	f.t.Helper()
	m, err := config.Parse(filepath.Join(f.t.TempDir(), "m.toml"), []byte(strings.ReplaceAll(manifest, "@MARK@", f.mark)))
	if err != nil {
		f.t.Fatalf("manifest: %v\n%s", err, manifest)
	}
	agentsAsRoot(m)
	return m
}

// reloadBase has a host whose session waits at a gate (an external supervisor the
// test answers), a rule supervisor for approvals, and a host nothing changes.
func reloadBase(policy, extra string) string {
	return simHost("w", "question_default = \"skip\"") + simHost("u", "") + `
[supervisors.gate]
strategy = "external"
[supervisors.policy]
strategy = "rule"
rules = [{ type = "approval", match = "^deploy$", answer = "` + policy + `" }]
[[routes]]
match = "^gate$"
supervisor = "gate"
[[routes]]
type = "approval"
supervisor = "policy"
` + extra
}

// A reload takes effect in a running session: the session asks, the manifest changes
// while it waits at the gate, and its next requests go by the new rules and routes to a
// supervisor the old manifest did not have. The next session of the changed host runs
// on a new process; the unchanged host keeps its own.
func TestReloadInPlace(t *testing.T) {
	before := reloadBase("no", "")
	after := reloadBase("yes", `
[supervisors.painter]
strategy = "static"
answers = { question = "blue" }
[[routes]]
match = "(?i)colour"
supervisor = "painter"
`)
	after = strings.Replace(after, `question_default = "skip"`, `question_default = "later"`, 1)
	f := start(t, before)
	if res := f.run("u", script(result)); !res.OK {
		t.Fatalf("u: %s", res.Error)
	}
	reloaded := make(chan error, 1)
	answerer(t, f.n.Bus.Conn, "gate", func(_ *wire.Ask, m *nats.Msg) {
		err := f.n.Reload(context.Background(), f.parsed(after))
		reloaded <- err
		reply(t, m, `"open"`)
	})
	res := f.run("w", script(
		send(`{"type":"approval","id":"a1","description":"deploy"}`), await("a1"),
		send(`{"type":"question","id":"q1","question":"Which colour?"}`), await("q1"),
		send(`{"type":"question","id":"g","question":"gate"}`), await("g"),
		send(`{"type":"approval","id":"a2","description":"deploy"}`), await("a2"),
		send(`{"type":"question","id":"q2","question":"Which colour?"}`), await("q2"), result))
	if err := <-reloaded; err != nil {
		t.Fatalf("reload: %v", err)
	}
	got := answers(t, res)
	for id, want := range map[string]struct{ value, decider string }{
		"a1": {`"no"`, "rule:policy"}, "q1": {`"skip"`, "default"},
		"a2": {`"yes"`, "rule:policy"}, "q2": {`"blue"`, "static:painter"},
	} {
		if string(got[id].Value) != want.value || record(res, id).Decider != want.decider {
			t.Errorf("%s = %s by %s; want %s by %s", id, got[id].Value, record(res, id).Decider, want.value, want.decider)
		}
	}
	// The host's new question_default holds from its next session, on a new process.
	res = f.run("w", script(send(`{"type":"question","id":"q3","question":"Anything else?"}`), await("q3"), result))
	if got := answers(t, res); string(got["q3"].Value) != `"later"` {
		t.Errorf("the next session's default: %s; want the reloaded \"later\"", got["q3"].Value)
	}
	if n := testutil.ToFloat64(f.n.Metrics.AgentStarts.WithLabelValues("w")); n != 2 {
		t.Errorf("host w started %v processes; want 2: one before the reload, one after", n)
	}
	if res := f.run("u", script(result)); !res.OK {
		t.Fatalf("u: %s", res.Error)
	}
	if n := testutil.ToFloat64(f.n.Metrics.AgentStarts.WithLabelValues("u")); n != 1 {
		t.Errorf("host u, unchanged, started %v processes; want its one process kept", n)
	}
	if v := testutil.ToFloat64(f.n.Metrics.ManifestReloads.WithLabelValues("ok")); v != 1 {
		t.Errorf("reloads ok = %v", v)
	}
}

// A reload the node cannot take in place is refused with what would need a restart,
// and the manifest before it runs on.
func TestReloadRefusesWhatNeedsARestart(t *testing.T) {
	base := reloadBase("yes", "")
	f := start(t, base)
	changed := strings.Replace(base, "[hosts.u]", "[hosts.u]\npool = 3", 1) +
		"[metrics]\naddr = \"127.0.0.1:0\"\n[audit]\nmax_age = \"720h\"\n" + simHost("v", "")
	err := f.n.Reload(context.Background(), f.parsed(changed))
	for _, want := range []string{"manifest not reloaded, the one before runs on", "hosts.u.pool 1 → 3", "[metrics] changed", "[audit] changed", "hosts added: v"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("reload error %v; want it to say %q", err, want)
		}
	}
	if v := testutil.ToFloat64(f.n.Metrics.ManifestReloadedOK); v != 0 {
		t.Errorf("last reload successful = %v; want 0", v)
	}
	res := f.run("w", script(send(`{"type":"approval","id":"a1","description":"deploy"}`), await("a1"), result))
	if got := answers(t, res); string(got["a1"].Value) != `"yes"` {
		t.Errorf("after a refused reload a1 = %s; want the running manifest's \"yes\"", got["a1"].Value)
	}
	// A supervisor that cannot start refuses the reload too (a --supervisors name gone
	// is one such case); here, an llm supervisor whose connection's key is unset.
	bad := base + "[connections.c]\nprovider = \"openai\"\ndefault_model = \"m\"\napi_key_env = \"AGENTMUX_TEST_UNSET_KEY\"\n[supervisors.thinker]\nstrategy = \"llm\"\nconnection = \"c\"\n"
	if err := f.n.Reload(context.Background(), f.parsed(bad)); err == nil || !strings.Contains(err.Error(), "AGENTMUX_TEST_UNSET_KEY") {
		t.Errorf("a reload whose llm supervisor cannot start: %v; want it refused, naming the unset key", err)
	}
	res = f.run("w", script(send(`{"type":"approval","id":"a1","description":"deploy"}`), await("a1"), result))
	if got := answers(t, res); string(got["a1"].Value) != `"yes"` {
		t.Errorf("after a failed reload a1 = %s; want the running manifest's \"yes\"", got["a1"].Value)
	}
}

// An ask a supervisor's old member is deciding when the manifest changes is handed
// back when that member stops, and the new member decides it: nothing waits for its
// deadline, and nothing is answered by the old rules.
func TestReloadHandsHeldAsksToTheNewMembers(t *testing.T) {
	slow := simHost("w", "question_timeout = \"20s\"") + `
[supervisors.script]
strategy = "command"
command = "sh"
args = ["-c", "read request; exec sleep 60"]
env = { AGENTMUX_TEST_MARK = "@MARK@-supervisor" }
[[routes]]
supervisor = "script"
`
	fast := strings.Replace(slow, `exec sleep 60`, `echo '{\"value\":\"from the new member\"}'`, 1)
	f := start(t, slow)
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := f.n.Run(ctx, "w", "", script(send(`{"type":"question","id":"q1","question":"Which?"}`), await("q1"), result))
		if err == nil {
			if got := answers(t, res); string(got["q1"].Value) != `"from the new member"` || record(res, "q1").Decider != "command:script" {
				t.Errorf("q1 = %s by %s; want the new member's answer", got["q1"].Value, record(res, "q1").Decider)
			}
		}
		done <- err
	}()
	proctest.Within(t, 10*time.Second, func() error {
		if len(proctest.Marked(f.mark+"-supervisor")) == 0 {
			return errors.New("the old member is not deciding q1 yet")
		}
		return nil
	})
	if err := f.n.Reload(context.Background(), f.parsed(fast)); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
