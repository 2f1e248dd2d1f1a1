package bus

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/wire"
)

func TestSubjectMatches(t *testing.T) {
	for _, c := range []struct {
		pattern, subject string
		want             bool
	}{
		{">", "a.b", true},
		{"a.>", "a", false},
		{"a.>", "a.b.c", true},
		{"a.*", "a.b", true},
		{"a.*", "a.b.c", false},
		{"a.*.c", "a.x.c", true},
		{"a.b", "a.b.c", false},
		{"_INBOX_ops.>", "_INBOX_ops.x.y", true},
		{"_INBOX_ops.>", "_INBOX_opsx.y", false},
		{"a.b.c", "a.b", false},
		{"a.*", "a", false},
		{">", "a", true},
		{"*", "a.b", false},
		{"a.b", "a.b", true},
		{"agentmux.respond.*.>", "agentmux.respond.ops.h-1", true},
		{"agentmux.respond.*.>", "agentmux.respond.ops", false},
		{"agentmux.ctl.n1.drain", "$KV.agentmux_nodes.n1", false},
	} {
		if got := subjectMatches(c.pattern, c.subject); got != c.want {
			t.Errorf("subjectMatches(%q, %q) = %v", c.pattern, c.subject, got)
		}
	}
	if n := testing.AllocsPerRun(100, func() { subjectMatches("agentmux.respond.*.>", "agentmux.respond.ops.h-1") }); n != 0 {
		t.Errorf("subjectMatches allocates %v times a call; every handler calls it on every message", n)
	}
}

func TestRolesAllowing(t *testing.T) {
	for _, c := range []struct {
		user    string
		pub     bool
		subject string
		want    []Role
	}{
		{"view", true, wire.TaskSubject("w"), []Role{RoleNode, RoleConsole}},                         // a task vouched for by nobody
		{"view", true, wire.TaskSubjectBy("w", "view"), []Role{RoleNode, RoleOperator, RoleConsole}}, // as itself
		{"view", true, wire.TaskSubjectBy("w", "human:alice"), []Role{RoleNode, RoleConsole}},        // the console queues for its people
		{"ops", true, wire.TaskSubjectBy("w", "view"), []Role{RoleNode, RoleConsole}},                // not as another operator
		{"x", true, wire.AttachSubject("laptops"), []Role{RoleNode, RoleConsole}},
		{"view", true, wire.RespondSubject("view", "h-1"), []Role{RoleNode, RoleOperator, RoleConsole}},
		{"ops", true, wire.RespondSubject("alice", "h-1"), []Role{RoleNode, RoleConsole}}, // another's name: the console answers for those it signed in
		{"view", true, wire.RevokeSubject("view", "g-h-1"), []Role{RoleNode, RoleOperator, RoleConsole}},
		{"ops", true, wire.RevokeSubject("alice", "g-h-1"), []Role{RoleNode, RoleConsole}}, // revoked as another: the console only
		{"pager", false, wire.AskSubject("oncall"), []Role{RoleNode}},                      // supervisors are named per user
		{"x", true, "$JS.API.STREAM.PURGE." + wire.AuditStream, []Role{RoleNode}},
		{"x", true, "$JS.API.DIRECT.GET." + wire.AuditStream + ".agentmux.audit.w.s-1", []Role{RoleNode, RoleOperator, RoleViewer, RoleConsole}},
		{"x", true, "$JS.API.DIRECT.GET." + wire.EventStream, []Role{RoleNode, RoleOperator, RoleViewer, RoleConsole}}, // batched: the history
		{"x", true, "$JS.API.DIRECT.GET." + wire.AuditStream, []Role{RoleNode}},
		// Readers make no consumers: a consumer's creator says where it delivers.
		{"x", true, "$JS.API.CONSUMER.CREATE." + wire.AuditStream, []Role{RoleNode}},
		{"x", true, "$JS.API.CONSUMER.DURABLE.CREATE." + wire.AuditStream + ".d", []Role{RoleNode}},
		{"x", false, "$KV." + wire.PendingBucket + ".h-1", []Role{RoleNode, RoleOperator, RoleViewer, RoleConsole}},
		{"x", false, wire.AllEvents, []Role{RoleNode, RoleOperator, RoleViewer, RoleConsole}},
		{"x", true, wire.CtlSubject("n1", "interrupt"), []Role{RoleNode, RoleOperator}},
	} {
		if got := RolesAllowing(c.user, c.pub, c.subject); !slices.Equal(got, c.want) {
			t.Errorf("RolesAllowing(%s, %v, %s) = %v, want %v", c.user, c.pub, c.subject, got, c.want)
		}
	}
	g := PermissionsFor(User{Name: "pager", Role: RoleSupervisor, Supervisors: []string{"oncall"}, Tools: []string{"lookup"}})
	if !g.Allows(false, wire.AskSubject("oncall")) || !g.Allows(false, wire.ToolSubject("lookup")) || g.Allows(false, wire.AskSubject("other")) || len(g.Publish) != 0 || !g.Responses {
		t.Fatalf("supervisor permissions %+v", g)
	}
	if p := g.forServer(); len(p.Publish.Deny) != 1 || p.Response == nil || p.Response.MaxMsgs != 1 {
		t.Fatalf("supervisor permissions %+v", p)
	}
}

func TestParseRespondSubject(t *testing.T) {
	if u, id, ok := wire.ParseRespondSubject(wire.RespondSubject("ops", "h-a.b")); !ok || u != "ops" || id != "h-a.b" {
		t.Fatalf("parsed %q %q %v", u, id, ok)
	}
	// A person the identity provider names by email: the dots stay theirs.
	subject := wire.RespondSubject("alice.b@example.com", "h-1")
	if strings.Count(subject, ".") != 3 {
		t.Fatalf("%s: an email's dots split the subject", subject)
	}
	if u, id, ok := wire.ParseRespondSubject(subject); !ok || u != "alice.b@example.com" || id != "h-1" {
		t.Fatalf("parsed %q %q %v", u, id, ok)
	}
	for _, s := range []string{"agentmux.respond.ops", "agentmux.respond..x", "agentmux.ask.x.y"} {
		if _, _, ok := wire.ParseRespondSubject(s); ok {
			t.Errorf("%q parsed", s)
		}
	}
}
