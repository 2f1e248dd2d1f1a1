package node

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nuid"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentmux/agentmux/actors/agent"
	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// promoteSupervisors: rule supervisor ops decides approvals, shadowed by yes, a static
// supervisor that approves everything; a person answers questions.
const promoteSupervisors = `
[supervisors.ops]
strategy = "rule"
rules = [{ type = "approval", match = "^npm test", answer = "yes" }, { type = "approval", match = "^rm ", answer = "no" }]
[supervisors.yes]
strategy = "static"
answers = { approval = "yes" }
[supervisors.oncall]
strategy = "human"
[[routes]]
type = "approval"
supervisor = "ops"
shadow = "yes"
[[routes]]
supervisor = "oncall"
`

// TestShadowPromotedFleetWide: a person promotes shadow yes. Every node of the fleet
// then has it decide the route it shadowed — in a session running since before, in new
// sessions, and on a node started after — with ops shadowing it; the promotion is
// audited in the person's name. Demoted, ops decides again everywhere.
func TestShadowPromotedFleetWide(t *testing.T) {
	t.Setenv("T_PEER_PASSWORD", nuid.Next())
	a := start(t, simHost("w", `question_timeout = "1m"`)+promoteSupervisors+peerUser)
	b := start(t, peerOf(a)+simHost("w", `question_timeout = "1m"`)+promoteSupervisors, func(o *Options) { o.Name = "b"; o.NoTasks = true })
	rm := func(id string) string {
		return send(fmt.Sprintf(`{"type":"approval","id":%q,"tool":"Bash","input":{"command":"rm -rf build"},"description":"rm -rf build"}`, id)) + "," + await(id)
	}
	decided := func(f *fixture, want, by string) {
		t.Helper()
		res := f.run("w", script(rm("r"), result))
		if r := record(res, "r"); string(r.Value) != want || r.Decider != by {
			t.Fatalf("node %s: rm was answered %s by %s; want %s by %s", f.n.Name, r.Value, r.Decider, want, by)
		}
	}
	decided(a, `"no"`, "rule:ops")
	decided(b, `"no"`, "rule:ops")

	// A session on b asks before the promotion and after it, holding on a person between,
	// and after (so that its shadow's decision is recorded before it ends).
	results := make(chan *agent.Result, 1)
	hold := func(id string) string {
		return send(`{"type":"question","id":"`+id+`","question":"Go on?"}`) + "," + await(id)
	}
	held := b.n.Submit("w", "", script(rm("before"), hold("q1"), rm("after"), hold("q2"), result), results)
	p := waitPending(t, pendingStore(t, b), held)

	promote := func(shadow, person string, req wire.ShadowPromote) *wire.ShadowPromoteReply {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		reply, err := store.PromoteShadow(ctx, a.n.Bus.Conn, shadow, person, &req)
		if err != nil {
			t.Fatal(err)
		}
		return reply
	}
	if r := promote("ops", "ana", wire.ShadowPromote{}); !strings.Contains(r.Error, "no route of node") || !strings.Contains(r.Error, "shadows ops") {
		t.Errorf("promoting ops, which shadows nothing: %+v", r)
	}
	if r := promote("yes", "ana", wire.ShadowPromote{Agreement: 2}); !strings.Contains(r.Error, "agreement 2: give a share from 0 to 1") {
		t.Errorf("a promotion agreeing 200%%: %+v", r)
	}
	reply := promote("yes", "ana", wire.ShadowPromote{Agreement: 0.97, Decided: 120, Note: "agrees with ops"})
	if reply.Error != "" || !slices.Equal(reply.Routes, []string{"routes[0]: ops → yes"}) || reply.Promotion.By != "human:ana" {
		t.Fatalf("the promotion: %+v", reply)
	}
	if r := promote("yes", "bo", wire.ShadowPromote{}); !strings.Contains(r.Error, "yes was promoted already, by human:ana") {
		t.Errorf("promoting yes again: %+v", r)
	}
	promoted := func(want bool, nodes ...*fixture) {
		t.Helper()
		for _, f := range nodes {
			proctest.Within(t, 10*time.Second, func() error {
				if f.n.promotedNow()["yes"] != want {
					return fmt.Errorf("node %s: yes promoted is not %v yet", f.n.Name, want)
				}
				return nil
			})
			wantGauge := map[bool]float64{true: 1, false: 0}[want]
			if got := testutil.ToFloat64(f.n.Metrics.Promoted.WithLabelValues("yes")); got != wantGauge {
				t.Errorf("node %s: agentmux_shadow_promoted{supervisor=yes} = %v; want %v", f.n.Name, got, wantGauge)
			}
		}
	}
	promoted(true, a, b)

	// The held session's next request is decided by yes; ops shadows it.
	if _, err := pendingStore(t, b).Respond(context.Background(), p.ID, "ana", wire.RespondRequest{Value: json.RawMessage(`"yes"`)}); err != nil {
		t.Fatal(err)
	}
	if r := awaitRecord(t, a, held, "shadow", "after"); r.Decider != "rule:ops" || r.Outcome != "disagreed" || string(r.Value) != `"no"` || r.GivenBy != "static:yes" {
		t.Errorf("the shadow record of the request after the promotion: %+v", r)
	}
	proctest.Within(t, 10*time.Second, func() error {
		if p = waitPending(t, pendingStore(t, b), held); p.Request != "q2" {
			return fmt.Errorf("request %s waits for a person; want q2", p.Request)
		}
		return nil
	})
	if _, err := pendingStore(t, b).Respond(context.Background(), p.ID, "ana", wire.RespondRequest{Value: json.RawMessage(`"yes"`)}); err != nil {
		t.Fatal(err)
	}
	res := <-results
	if before, after := record(res, "before"), record(res, "after"); string(before.Value) != `"no"` || string(after.Value) != `"yes"` || after.Decider != "static:yes" {
		t.Fatalf("the session running through the promotion: before %s by %s, after %s by %s", before.Value, before.Decider, after.Value, after.Decider)
	}
	decided(a, `"yes"`, "static:yes")
	decided(b, `"yes"`, "static:yes")

	// A node started after the promotion starts with it; one reloading its manifest
	// keeps it.
	c := start(t, peerOf(a)+simHost("w", "")+promoteSupervisors, func(o *Options) { o.Name = "c"; o.NoTasks = true })
	decided(c, `"yes"`, "static:yes")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := b.n.Reload(ctx, b.parsed(peerOf(a)+simHost("w", `question_timeout = "1m"`)+promoteSupervisors)); err != nil {
		t.Fatal(err)
	}
	decided(b, `"yes"`, "static:yes")

	audited := func(kind string) *wire.AuditRecord { return awaitRecord(t, a, promotionsAudit, kind, "") }
	if r := audited(wire.AuditShadowPromoted); r.Decider != "human:ana" || r.Reason != "agrees with ops" ||
		r.Text != "shadow yes promoted by ana, agreeing 97.0% of 120 decisions: routes[0]: ops → yes" {
		t.Errorf("the promotion's audit record: %+v", r)
	}

	if r := promote("yes", "bo", wire.ShadowPromote{Demote: true}); r.Error != "" || r.Promotion.By != "human:ana" {
		t.Fatalf("the demotion: %+v", r)
	}
	if r := promote("yes", "bo", wire.ShadowPromote{Demote: true}); !strings.Contains(r.Error, "yes is not promoted") {
		t.Errorf("demoting yes again: %+v", r)
	}
	promoted(false, a, b, c)
	decided(a, `"no"`, "rule:ops")
	decided(b, `"no"`, "rule:ops")
	decided(c, `"no"`, "rule:ops")
	if r := audited(wire.AuditShadowDemoted); r.Decider != "human:bo" || !strings.HasPrefix(r.Text, "shadow yes demoted by bo (promoted by human:ana at ") {
		t.Errorf("the demotion's audit record: %+v", r)
	}
}

// awaitRecord waits for session's audit to hold a record of kind (of request, if
// named), and returns it.
func awaitRecord(t *testing.T, f *fixture, session, kind, request string) *wire.AuditRecord {
	t.Helper()
	var found *wire.AuditRecord
	proctest.Within(t, 10*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		records, err := store.ReadAudit(ctx, f.n.Bus.JS, session)
		if err != nil {
			return err
		}
		for _, r := range records {
			if r.Kind == kind && (request == "" || r.Request == request) {
				found = r
				return nil
			}
		}
		return fmt.Errorf("no %s record of request %q among the %d of session %s", kind, request, len(records), session)
	})
	return found
}
