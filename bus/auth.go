package bus

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentmux/agentmux/wire"
	"github.com/nats-io/nats-server/v2/server"
)

// Role names what an identity on the bus may do.
type Role string

// The roles of [[nats.users]].
const (
	RoleNode       Role = "node"       // everything a node does
	RoleOperator   Role = "operator"   // submit, watch, pending/respond, ctl, read audit
	RoleViewer     Role = "viewer"     // watch, read audit and pending
	RoleSupervisor Role = "supervisor" // take the asks of its supervisors, serve its tools
	// RoleConsole is `agentmux console`: it reads what a viewer reads and answers
	// requests in the name of each person it signed in, so it is trusted as they are.
	RoleConsole Role = "console"
)

// Roles lists every role, most powerful first.
func Roles() []Role { return []Role{RoleNode, RoleOperator, RoleViewer, RoleSupervisor, RoleConsole} }

// User is one identity the embedded server lets in.
type User struct {
	Name     string
	Password string // or
	Nkey     string // its public nkey, "U…"
	Role     Role
	// Supervisors and Tools: role supervisor takes the asks of these supervisors and
	// serves these tools.
	Supervisors []string
	Tools       []string
}

// Permissions are the subjects an identity may publish and subscribe to.
type Permissions struct {
	Publish   []string
	Subscribe []string
	// Responses: it may reply once to each request it received (supervisors and tool
	// servers), though it may publish nothing else.
	Responses bool
}

// responseTTL is how long a supervisor may take to reply to an ask: past any deadline.
const responseTTL = 24 * time.Hour

// readable are the streams and buckets operators and viewers may read.
var readable = []string{wire.AuditStream, wire.TaskStream, wire.EventStream, "KV_" + wire.PendingBucket, "KV_" + wire.NodesBucket, "KV_" + wire.PipelineBucket,
	"KV_" + wire.SpendBucket, "KV_" + wire.PromotionsBucket, "KV_" + wire.CheckpointIndexBucket}

// readStream is what reading a stream takes: its info, message gets (scan) and direct
// gets of a subject's last message (a bucket's key), and for the history of events,
// batched direct gets (store.scanDirect). No consumer: its creator would choose where
// it delivers, and the server does not check that the creator may receive there
// (CheckRequest). Each subject counts: in operator mode a user's permissions travel in
// its JWT, whose CONNECT line a server caps at 4 KiB.
func readStream(stream string) []string {
	out := []string{"$JS.API.STREAM.INFO." + stream, "$JS.API.STREAM.MSG.GET." + stream, "$JS.API.DIRECT.GET." + stream + ".>"}
	if stream == wire.EventStream {
		out = append(out, "$JS.API.DIRECT.GET."+stream)
	}
	return out
}

// PermissionsFor returns what u may do: docs/security.md shows the same table.
func PermissionsFor(u User) Permissions {
	switch u.Role {
	case RoleNode:
		return Permissions{Publish: []string{">"}, Subscribe: []string{">"}}
	case RoleOperator, RoleViewer, RoleConsole, RoleLocal:
		// The answers standing for a session or a host, and the rules files.
		g := Permissions{Publish: []string{"$JS.API.INFO", wire.GrantsSubject, wire.RulesSubject},
			Subscribe: []string{wire.AllEvents, wire.HumanSubjects, wire.PendingSubjects, wire.InboxPrefix(u.Name) + ".>"}}
		for _, s := range readable {
			g.Publish = append(g.Publish, readStream(s)...)
		}
		if u.Role == RoleConsole {
			// Answer as each person; for the API's tokens, queue tasks and put attached
			// agents' requests to the nodes.
			// Change rules files ("always for this rule"), raise hosts' daily budgets and
			// promote shadow supervisors as each person.
			g.Publish = append(g.Publish, wire.RespondSubjects, wire.RevokeSubjects, wire.RulesChangeSubjects, wire.BudgetRaiseSubjects, wire.ShadowPromoteSubjects,
				wire.CtlSubject("*", "list"), wire.TaskSubjects, wire.AttachSubjects)
		}
		if u.Role == RoleLocal {
			g.Publish = append(g.Publish, wire.RespondSubjects, wire.RevokeSubjects, wire.RulesChangeSubjects, wire.AttachSubjects, wire.BudgetRaiseSubjects, wire.ShadowPromoteSubjects)
		}
		if u.Role == RoleOperator || u.Role == RoleLocal {
			// The model calls' requests and answers ([gateway] record = "full"): what
			// agents sent their models, prompts, files and transcripts, for operators.
			// The same of checkpoints, which hold what an agent knows: exported through
			// a node.
			g.Publish = append(g.Publish, readStream(wire.ExchangeStream)...)
			g.Publish = append(g.Publish, wire.CheckpointExportSubject)
			// Queue tasks, and take one out of the queue before a node starts it (cancel).
			// An operator queues as itself only; the local operator for the person at
			// the machine, as the console does for its people.
			queue := wire.TaskSubjects
			if u.Role == RoleOperator {
				queue = wire.TaskSubjectsBy(u.Name)
			}
			g.Publish = append(g.Publish, queue, "$JS.API.STREAM.MSG.DELETE."+wire.TaskStream, wire.RespondSubject(u.Name, ">"), wire.RevokeSubject(u.Name, ">"),
				wire.RulesChangeSubject("*", u.Name), wire.BudgetRaiseSubject("*", u.Name), wire.ShadowPromoteSubject("*", u.Name))
			// Every control verb (CtlVerbs), as one wildcard: a user's permissions travel
			// in its JWT in operator mode, whose CONNECT line the server caps at 4 KiB.
			g.Publish = append(g.Publish, wire.CtlSubject("*", "*"))
		}
		return g
	case RoleSupervisor:
		g := Permissions{Responses: true}
		for _, s := range u.Supervisors {
			g.Subscribe = append(g.Subscribe, wire.AskSubject(s))
		}
		for _, t := range u.Tools {
			g.Subscribe = append(g.Subscribe, wire.ToolSubject(t))
		}
		return g
	}
	return Permissions{}
}

// CtlVerbs are the control requests a node answers on agentmux.ctl.<node>.<verb>.
func CtlVerbs() []string {
	return []string{"list", "interrupt", "message", "cancel", "pause", "resume", "paused", "drain", "undrain", "workspaces", "workspace-diff", "workspace-clean"}
}

// forServer turns the permissions into the server's subject permissions; an empty list allows
// nothing.
func (g Permissions) forServer() *server.Permissions {
	p := &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: g.Publish},
		Subscribe: &server.SubjectPermission{Allow: g.Subscribe},
	}
	if len(g.Publish) == 0 {
		p.Publish = &server.SubjectPermission{Deny: []string{">"}}
	}
	if len(g.Subscribe) == 0 {
		p.Subscribe = &server.SubjectPermission{Deny: []string{">"}}
	}
	if g.Responses {
		p.Response = &server.ResponsePermission{MaxMsgs: 1, Expires: responseTTL}
	}
	return p
}

// Allows reports whether the permissions let publish (or subscribe, when pub is false) on
// subject.
func (g Permissions) Allows(pub bool, subject string) bool {
	list := g.Subscribe
	if pub {
		list = g.Publish
	}
	return slices.ContainsFunc(list, func(pattern string) bool { return subjectMatches(pattern, subject) })
}

// RolesAllowing names the roles that would let the user name publish (or subscribe to)
// subject.
func RolesAllowing(name string, pub bool, subject string) []Role {
	var out []Role
	for _, r := range Roles() {
		if PermissionsFor(User{Name: name, Role: r}).Allows(pub, subject) {
			out = append(out, r)
		}
	}
	return out
}

// subjectMatches reports whether subject fits pattern, whose tokens may be * (any one)
// or a final > (one or more). It allocates nothing: every handler calls it on every
// message (CheckRequest).
func subjectMatches(pattern, subject string) bool {
	for {
		ptok, prest, pmore := strings.Cut(pattern, ".")
		stok, srest, smore := strings.Cut(subject, ".")
		switch {
		case ptok == ">":
			return !pmore && stok != ""
		case ptok != "*" && ptok != stok:
			return false
		case !pmore || !smore:
			return pmore == smore
		}
		pattern, subject = prest, srest
	}
}

// serverAuth adds users to the server's options; with any, anonymous clients are
// refused.
func serverAuth(opts *server.Options, users []User) error {
	for _, u := range users {
		perms := PermissionsFor(u).forServer()
		if u.Role == RoleNode {
			// May do everything: no permissions at all, rather than ">" both ways, which
			// the server would check on every message of a node (an event's subject is
			// new for every session, so its permission cache rarely helps).
			perms = nil
		}
		switch {
		case u.Nkey != "":
			opts.Nkeys = append(opts.Nkeys, &server.NkeyUser{Nkey: u.Nkey, Permissions: perms})
		case u.Password != "":
			opts.Users = append(opts.Users, &server.User{Username: u.Name, Password: u.Password, Permissions: perms})
		default:
			return fmt.Errorf("bus: user %q has neither password nor nkey; set its password_env variable", u.Name)
		}
	}
	return nil
}
