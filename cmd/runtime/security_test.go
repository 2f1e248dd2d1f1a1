package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	"github.com/nats-io/nuid"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// secureNode is a `agentmux up` whose embedded server has users of every role.
type secureNode struct {
	manifest  string
	url       string
	passwords map[string]string // user → password
	seedFile  string            // the nkey user "keyed"'s seed
	dir       string
	up        *proc // `agentmux up`
}

const secureNodeName = "secure1"

func startSecureNode(t *testing.T) *secureNode {
	t.Helper()
	s := &secureNode{dir: t.TempDir(), passwords: map[string]string{}}
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := kp.Seed()
	pub, _ := kp.PublicKey()
	s.seedFile = filepath.Join(s.dir, "keyed.nk")
	if err := os.WriteFile(s.seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, u := range []string{"ops", "view", "pager", "machine", "desk"} {
		s.passwords[u] = nuid.Next()
		env = append(env, "T_PW_"+strings.ToUpper(u)+"="+s.passwords[u])
	}
	port := proctest.FreePort(t)
	s.url = fmt.Sprintf("nats://127.0.0.1:%d", port)
	m := fmt.Sprintf(`[nats]
listen = "127.0.0.1:%d"
store_dir = %q
[[nats.users]]
name = "ops"
password_env = "T_PW_OPS"
role = "operator"
[[nats.users]]
name = "view"
password_env = "T_PW_VIEW"
role = "viewer"
[[nats.users]]
name = "pager"
password_env = "T_PW_PAGER"
role = "supervisor"
supervisors = ["oncall"]
[[nats.users]]
name = "machine"
password_env = "T_PW_MACHINE"
role = "node"
[[nats.users]]
name = "desk"
password_env = "T_PW_DESK"
role = "console"
[[nats.users]]
name = "keyed"
nkey = %q
role = "operator"
[metrics]
addr = "127.0.0.1:0"
[hosts.w]
command = %q
args = ["sim"]
env = { AGENTMUX_RUNTIME_MAIN = "1" }
question_timeout = "2m"
[hosts.envdump]
command = "python3"
args = ["-c", %q]
[supervisors.envcheck]
strategy = "command"
command = "python3"
args = ["-c", %q]
[supervisors.oncall]
strategy = "external"
[supervisors.other]
strategy = "external"
[supervisors.people]
strategy = "human"
[supervisors.qa]
strategy = "rule"
rules = [{ match = "tests", answer = "yes" }]
[[routes]]
match = "env check"
supervisor = "envcheck"
[[routes]]
match = "(?i)deploy"
supervisor = "oncall"
[[routes]]
match = "(?i)other"
supervisor = "other"
[[routes]]
match = "(?i)person"
supervisor = "people"
[[routes]]
supervisor = "qa"
`, port, filepath.Join(s.dir, "store"), pub, os.Args[0], envAgent, envSupervisor)
	s.manifest = filepath.Join(s.dir, "agentmux.toml")
	if err := os.WriteFile(s.manifest, []byte(m), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "up", "-c", s.manifest, "--name", secureNodeName)
	// The node's own environment holds every secret a machine might: its users'
	// passwords and a client identity.
	cmd.Env = append(env, "AGENTMUX_NATS_USER=ops", "AGENTMUX_NATS_PASSWORD="+s.passwords["ops"])
	s.up = startProc(t, cmd)
	until(t, "secure node up", s.up.stderr, "node up")
	return s
}

// envAgent asks an approval, then ends with its whole environment as the result;
// envSupervisor approves, giving its whole environment as the reason.
const (
	envAgent = `import json, os, sys
sys.stdin.readline()
print(json.dumps({"type": "approval", "id": "a1", "description": "env check"}), flush=True)
sys.stdin.readline()
print(json.dumps({"type": "result", "text": json.dumps(dict(os.environ))}), flush=True)
`
	envSupervisor = `import json, os, sys
sys.stdin.readline()
print(json.dumps({"value": "yes", "reason": json.dumps(dict(os.environ))}))
`
)

// TestSecureChildrenSeeNoCredential: an agent and a command supervisor, run by a node
// whose environment holds every password, see none of them.
func TestSecureChildrenSeeNoCredential(t *testing.T) {
	t.Parallel()
	s := startSecureNode(t)
	code, out, events := s.cli(t, "ops", "submit", "-c", s.manifest, "--id", "t-env", "envdump", "go", "--follow")
	if code != exitOK || !strings.Contains(out, "PATH") || !strings.Contains(events, `"decider":"command:envcheck"`) || !strings.Contains(events, "PATH") {
		t.Fatalf("the environment dump: exit %d\n%s\n%s", code, out, events)
	}
	for user, pw := range s.passwords {
		if strings.Contains(out, pw) || strings.Contains(events, pw) {
			t.Errorf("%s's password reached a child process", user)
		}
	}
	for _, name := range []string{"T_PW_", "AGENTMUX_NATS_"} {
		if strings.Contains(out, name) || strings.Contains(events, name) {
			t.Errorf("a child process saw a variable named %s…", name)
		}
	}
}

// cli runs a CLI command as user (no user: anonymous) and returns its exit code,
// stdout and stderr.
func (s *secureNode) cli(t *testing.T, user string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	if user != "" {
		cmd.Env = []string{"AGENTMUX_NATS_USER=" + user, "AGENTMUX_NATS_PASSWORD=" + s.passwords[user]}
	}
	p := startProc(t, cmd)
	code := p.wait(t, 30*time.Second)
	return code, p.stdout.String(), p.stderr.String()
}

// conn connects as user the way the CLI does; refused is cancelled with the server's
// refusal the moment one arrives.
func (s *secureNode) conn(t *testing.T, user string) (*nats.Conn, jetstream.JetStream, context.Context) {
	t.Helper()
	ctx, refuse := context.WithCancelCause(context.Background())
	t.Cleanup(func() { refuse(nil) })
	nc, err := bus.Connect(bus.Client{URL: s.url, Name: "test-" + user, User: user,
		Identity:  bus.Identity{User: user, Password: s.passwords[user]},
		OnRefusal: func(r *bus.PermissionError) { refuse(r) }})
	if err != nil {
		t.Fatalf("connect as %s: %v", user, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js, ctx
}

// subscribeOnce subscribes to subject (in queue group queue, if any) and unsubscribes
// once the server has taken or refused it.
func subscribeOnce(nc *nats.Conn, subject, queue string) error {
	sub, err := nc.QueueSubscribeSync(subject, queue)
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	return nc.Flush()
}

// TestSecureRoles: against a running node, each role may do what its row allows and
// is refused the rest, with an error naming the subject.
func TestSecureRoles(t *testing.T) {
	t.Parallel()
	s := startSecureNode(t)
	task, _ := json.Marshal(&wire.Task{ID: "t-roles", Host: "w", Prompt: okScript})
	ops := []struct {
		name    string
		allowed []string // users whose role allows it
		skip    []string // users it is not tried as: it would change the node's state
		do      func(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error
	}{
		{"submit a task as itself", []string{"machine", "ops", "desk"}, nil, func(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
			user := strings.TrimPrefix(nc.Opts.Name, "test-")
			_, err := js.Publish(ctx, wire.TaskSubjectBy("w", user), task, jetstream.WithMsgID("t-roles"))
			return err
		}},
		{"submit a task as another", []string{"machine", "desk"}, nil, func(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
			_, err := js.Publish(ctx, wire.TaskSubjectBy("w", "alice"), task, jetstream.WithMsgID("t-roles"))
			return err
		}},
		{"submit a task vouched for by nobody", []string{"machine", "desk"}, nil, func(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
			_, err := js.Publish(ctx, wire.TaskSubject("w"), task, jetstream.WithMsgID("t-roles"))
			return err
		}},
		{"take oncall's asks", []string{"machine", "pager"}, nil, func(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
			return subscribeOnce(nc, wire.AskSubject("oncall"), "oncall")
		}},
		{"take another supervisor's asks", []string{"machine"}, nil, func(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
			return subscribeOnce(nc, wire.AskSubject("other"), "other")
		}},
		{"reply on a node's inbox unasked", []string{"machine"}, nil, func(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
			if err := nc.Publish("_INBOX."+nuid.Next()+".k1", []byte(`{"value":"yes","decider":"rule:forged"}`)); err != nil {
				return err
			}
			return nc.Flush()
		}},
		{"watch events", []string{"machine", "ops", "view", "desk"}, nil, func(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
			return subscribeOnce(nc, wire.AllEvents, "")
		}},
		{"put an attached agent's request, as anyone", []string{"machine", "desk"}, nil, func(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
			// Only a console (and the local CLI) puts these, as the API token's user; a
			// reader of the bus that could would ask in anyone's session.
			req, _ := json.Marshal(&wire.AttachRequest{Session: "s-forged", User: "alice", Request: json.RawMessage(`{"type":"approval","description":"rm -rf /"}`)})
			if err := nc.Publish(wire.AttachSubject("laptops"), req); err != nil {
				return err
			}
			return nc.Flush()
		}},
		{"publish an event", []string{"machine"}, nil, func(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
			if err := nc.Publish(wire.EventSubject("w", "forged", "progress"), []byte(`{}`)); err != nil {
				return err
			}
			return nc.Flush()
		}},
		{"read the audit", []string{"machine", "ops", "view", "desk"}, nil, func(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
			_, err := store.ReadAudit(ctx, js, "t-none")
			return err
		}},
		{"read the model calls' requests and answers", []string{"machine", "ops"}, nil, func(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
			// What agents sent their models (prompts, files, transcripts): for operators,
			// never a viewer, a supervisor or the console.
			_, err := store.ReadExchanges(ctx, js, "t-none")
			return err
		}},
		{"list a session's checkpoints", []string{"machine", "ops", "view", "desk"}, nil, func(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
			_, err := store.ListCheckpoints(ctx, nc, "t-none")
			return err
		}},
		{"export a checkpoint", []string{"machine", "ops"}, nil, func(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
			// An agent's state, later its transcript: for operators alone.
			return publishRequest(nc, wire.CheckpointExportSubject, `{"session":"t-none","part":"state"}`)
		}},
		{"read a checkpoint's parts", []string{"machine"}, nil, func(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
			// Not even operators: they export through a node, never from the store.
			_, err := nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET.OBJ_"+wire.CheckpointBucket, []byte(`{"last_by_subj":"$O.agentmux_checkpoints.M.none"}`))
			return err
		}},
		{"read a small checkpoint's parts", []string{"machine"}, nil, func(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
			// They are one entry of the data bucket, as closed as the objects.
			_, err := nc.RequestWithContext(ctx, "$JS.API.DIRECT.GET.KV_"+wire.CheckpointDataBucket+".$KV."+wire.CheckpointDataBucket+".t-none.0", nil)
			return err
		}},
		{"read pending requests", []string{"machine", "ops", "view", "desk"}, nil, func(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
			pending, err := store.OpenPending(ctx, js, nc)
			if err != nil {
				return err
			}
			_, err = pending.List(ctx)
			return err
		}},
		{"read the daily spend", []string{"machine", "ops", "view", "desk"}, nil, func(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
			_, err := store.ReadSpend(ctx, nc, time.Now().AddDate(0, 0, -7))
			return err
		}},
		{"purge the audit", []string{"machine"}, nil, func(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
			// A purge of a subject no record has: allowed or not, it removes nothing.
			_, err := nc.RequestWithContext(ctx, "$JS.API.STREAM.PURGE."+wire.AuditStream, []byte(`{"filter":"agentmux.audit.none.none"}`))
			return err
		}},
		{"delete the task stream", nil, []string{"machine"}, func(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
			return js.DeleteStream(ctx, wire.TaskStream)
		}},
		{"write a pending request", nil, []string{"machine"}, func(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
			_, err := js.Publish(ctx, "$KV."+wire.PendingBucket+".h-forged", []byte(`{}`))
			return err
		}},
		{"answer a person's request", []string{"machine", "ops", "desk"}, nil, func(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
			user := strings.TrimPrefix(nc.Opts.Name, "test-")
			msg, err := nc.RequestWithContext(ctx, wire.RespondSubject(user, "h-none"), []byte(`{"value":"yes"}`))
			if err != nil {
				return err
			}
			var reply wire.RespondReply
			if err := json.Unmarshal(msg.Data, &reply); err != nil || reply.Code != wire.RespondNoSuch {
				return fmt.Errorf("reply %s", msg.Data)
			}
			return nil
		}},
		{"revoke a standing answer", []string{"machine", "ops", "desk"}, nil, func(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
			// A viewer or an agent that could would have a person's "no for the host"
			// asked again.
			user := strings.TrimPrefix(nc.Opts.Name, "test-")
			msg, err := nc.RequestWithContext(ctx, wire.RevokeSubject(user, "g-h-none"), nil)
			if err != nil {
				return err
			}
			var reply wire.RespondReply
			if err := json.Unmarshal(msg.Data, &reply); err != nil || reply.Code != wire.RespondNoSuch {
				return fmt.Errorf("reply %s", msg.Data)
			}
			return nil
		}},
		{"revoke a standing answer as another person", []string{"machine", "desk"}, nil, func(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
			_, err := nc.RequestWithContext(ctx, wire.RevokeSubject("ana@example.com", "g-h-none"), nil)
			return err
		}},
		{"list the rules files", []string{"machine", "ops", "view", "desk"}, nil, func(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
			_, err := nc.RequestWithContext(ctx, wire.RulesSubject, nil)
			return err
		}},
		{"change a rules file", []string{"machine", "ops", "desk"}, nil, func(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
			// A viewer that could would allow, for every agent, what a person must approve.
			user := strings.TrimPrefix(nc.Opts.Name, "test-")
			return publishRequest(nc, wire.RulesChangeSubject("policy", user), `{"id":"c1","verdict":"allow","rules":["Bash"]}`)
		}},
		{"change a rules file as another person", []string{"machine", "desk"}, nil, func(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
			return publishRequest(nc, wire.RulesChangeSubject("policy", "ana@example.com"), `{"id":"c1","verdict":"allow","rules":["Bash"]}`)
		}},
		{"raise a host's daily budget", []string{"machine", "ops", "desk"}, nil, func(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
			// A viewer or an agent that could would spend past what the fleet may.
			user := strings.TrimPrefix(nc.Opts.Name, "test-")
			return publishRequest(nc, wire.BudgetRaiseSubject("w", user), `{"usd":1000}`)
		}},
		{"raise a host's daily budget as another person", []string{"machine", "desk"}, nil, func(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
			return publishRequest(nc, wire.BudgetRaiseSubject("w", "ana@example.com"), `{"usd":1000}`)
		}},
		{"promote a shadow supervisor", []string{"machine", "ops", "desk"}, nil, func(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
			// A viewer or an agent that could would have its own supervisor decide.
			user := strings.TrimPrefix(nc.Opts.Name, "test-")
			return publishRequest(nc, wire.ShadowPromoteSubject("optimist", user), `{"agreement":1,"decided":1000}`)
		}},
		{"promote a shadow supervisor as another person", []string{"machine", "desk"}, nil, func(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
			return publishRequest(nc, wire.ShadowPromoteSubject("optimist", "ana@example.com"), `{"agreement":1,"decided":1000}`)
		}},
		{"read the promotions", []string{"machine", "ops", "view", "desk"}, nil, func(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
			_, err := store.ReadPromotions(ctx, nc)
			return err
		}},
		{"write a promotion", nil, []string{"machine"}, func(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
			_, err := js.Publish(ctx, "$KV."+wire.PromotionsBucket+".optimist", []byte(`{"shadow":"optimist","by":"human:ana"}`))
			return err
		}},
		{"ctl list", []string{"machine", "ops", "desk"}, nil, func(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
			_, err := nc.RequestWithContext(ctx, wire.CtlSubject(secureNodeName, "list"), nil)
			return err
		}},
		{"ctl interrupt", []string{"machine", "ops"}, nil, func(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
			_, err := nc.RequestWithContext(ctx, wire.CtlSubject(secureNodeName, "interrupt"), []byte(`{"session":"t-none"}`))
			return err
		}},
		{"pause a session", []string{"machine", "ops"}, nil, func(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
			_, err := nc.RequestWithContext(ctx, wire.CtlSubject(secureNodeName, "pause"), []byte(`{"session":"t-none"}`))
			return err
		}},
		{"resume a session", []string{"machine", "ops"}, nil, func(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
			_, err := nc.RequestWithContext(ctx, wire.CtlSubject(secureNodeName, "resume"), []byte(`{"session":"t-none"}`))
			return err
		}},
		{"list the paused sessions", []string{"machine", "ops"}, nil, func(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
			_, err := nc.RequestWithContext(ctx, wire.CtlSubject(secureNodeName, "paused"), nil)
			return err
		}},
		{"read the paused sessions' bucket", []string{"machine"}, nil, func(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
			// Through a node only: each readable stream's subjects lengthen a reader's JWT.
			_, err := nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET.KV_"+wire.PausedBucket, []byte(`{"last_by_subj":"$KV.agentmux_paused.t-none"}`))
			return err
		}},
		{"mark a session paused", nil, []string{"machine"}, func(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
			// A forged entry would have a resume queue a task of the forger's choosing.
			_, err := js.Publish(ctx, "$KV."+wire.PausedBucket+".t-none", []byte(`{"session":"t-none","host":"w","seq":1,"subject":"agentmux.task.w"}`))
			return err
		}},
		{"forge a checkpoint", nil, []string{"machine"}, func(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
			// A forged checkpoint would bring a session back in a state of the forger's.
			_, err := js.Publish(ctx, "$KV."+wire.CheckpointIndexBucket+".t-none.000009", []byte(`{"session":"t-none","seq":9,"host":"w","parts":[{"name":"state","bytes":2}]}`))
			if err == nil {
				_, err = js.Publish(ctx, "$O."+wire.CheckpointBucket+".C.forged", []byte(`{}`))
			}
			return err
		}},
		{"forge a small checkpoint's parts", nil, []string{"machine"}, func(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
			_, err := js.Publish(ctx, "$KV."+wire.CheckpointDataBucket+".t-none.0", []byte(`{"step":"the forger's"}`))
			return err
		}},
	}
	for _, user := range []string{"machine", "ops", "view", "pager", "desk"} {
		for _, op := range ops {
			if slices.Contains(op.skip, user) {
				continue
			}
			t.Run(user+"/"+op.name, func(t *testing.T) {
				nc, js, refused := s.conn(t, user)
				ctx, cancel := context.WithTimeout(refused, 10*time.Second)
				defer cancel()
				err := op.do(ctx, nc, js)
				perm := bus.Refusal(nc.LastError(), user)
				var cause *bus.PermissionError
				if errors.As(context.Cause(refused), &cause) {
					perm = cause
				}
				if perm != nil {
					err = perm
				}
				want := slices.Contains(op.allowed, user)
				switch {
				case want && err != nil:
					t.Fatalf("%s may %s, but: %v", user, op.name, err)
				case !want && perm == nil:
					t.Fatalf("%s may not %s, but it was not refused (err %v)", user, op.name, err)
				case !want && !strings.Contains(perm.Error(), fmt.Sprintf("user %q may not", user)):
					t.Fatalf("refusal %q does not name the user", perm)
				}
			})
		}
	}
}

// TestSecureCLI: anonymous and wrong-password clients are refused with what to do;
// a refused command names the subject and the roles that may; an answer is recorded as
// the authenticated user, never as the name a client claims.
func TestSecureCLI(t *testing.T) {
	t.Parallel()
	s := startSecureNode(t)
	if _, err := nats.Connect(s.url); !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("an anonymous connection: %v", err)
	}
	code, _, stderr := s.cli(t, "", "pending", "-c", s.manifest)
	if code != exitError || !strings.Contains(stderr, "anonymous clients are refused") || !strings.Contains(stderr, "AGENTMUX_NATS_USER") {
		t.Fatalf("anonymous pending: exit %d, %s", code, stderr)
	}
	wrong := exec.Command(os.Args[0], "pending", "-c", s.manifest)
	wrong.Env = []string{"AGENTMUX_NATS_USER=ops", "AGENTMUX_NATS_PASSWORD=wrong"}
	p := startProc(t, wrong)
	if code := p.wait(t, 30*time.Second); code != exitError || !strings.Contains(p.stderr.String(), `user "ops" was refused`) ||
		!strings.Contains(p.stderr.String(), "the password is wrong") {
		t.Fatalf("wrong password: exit %d, %s", code, p.stderr)
	}

	code, _, stderr = s.cli(t, "view", "submit", "-c", s.manifest, "w", okScript)
	if code != exitError || !strings.Contains(stderr, `permission denied: user "view" may not publish to "agentmux.task.w.view"; role node, operator or console may`) {
		t.Fatalf("viewer submit: exit %d, %s", code, stderr)
	}
	code, _, stderr = s.cli(t, "view", "respond", "-c", s.manifest, "h-none", "yes")
	if code != exitError || !strings.Contains(stderr, `user "view" may not publish to "agentmux.respond.view.h-none"; role node, operator or console may`) {
		t.Fatalf("viewer respond: exit %d, %s", code, stderr)
	}
	// A viewer neither steers nor undrains, and may not list sessions (a node's
	// control subject); it reads the work queue, as it reads the audit.
	code, _, stderr = s.cli(t, "view", "undrain", "-c", s.manifest, secureNodeName)
	if code != exitError || !strings.Contains(stderr, `user "view" may not publish to "agentmux.ctl.`+secureNodeName+`.undrain"`) {
		t.Fatalf("viewer undrain: exit %d, %s", code, stderr)
	}
	code, _, stderr = s.cli(t, "view", "sessions", "-c", s.manifest)
	if code != exitError || !strings.Contains(stderr, `user "view" may not publish to "agentmux.ctl.`) {
		t.Fatalf("viewer sessions: exit %d, %s", code, stderr)
	}
	if code, out, stderr := s.cli(t, "view", "tasks", "-c", s.manifest); code != exitOK || !strings.Contains(out, "the work queue is empty") {
		t.Fatalf("viewer tasks: exit %d, %s%s", code, out, stderr)
	}
	code, _, stderr = s.cli(t, "pager", "audit", "-c", s.manifest, "t-none")
	if code != exitError || !strings.Contains(stderr, `user "pager" may not publish to "$JS.API.`) {
		t.Fatalf("supervisor audit: exit %d, %s", code, stderr)
	}
	code, _, stderr = s.cli(t, "ops", "respond", "-c", s.manifest, "--as", "alice", "h-none", "yes")
	if code != exitUsage || !strings.Contains(stderr, `--as "alice": you are connected as "ops"`) {
		t.Fatalf("respond --as another: exit %d, %s", code, stderr)
	}
	// An nkey user: the manifest maps its key to its name.
	keyed := filepath.Join(s.dir, "keyed.toml")
	src, _ := os.ReadFile(s.manifest)
	if err := os.WriteFile(keyed, []byte(strings.Replace(string(src), "[nats]\n", fmt.Sprintf("[nats]\nnkey_seed_file = %q\n", s.seedFile), 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = s.cli(t, "", "respond", "-c", keyed, "h-none", "yes")
	if code != exitUsage || !strings.Contains(stderr, `no such pending request "h-none"`) {
		t.Fatalf("nkey respond: exit %d, %s", code, stderr)
	}

	// A person's answer, as ops: recorded as human:ops.
	follow := exec.Command(os.Args[0], "submit", "-c", s.manifest, "--id", "t-person", "w",
		`{"steps":[{"send":{"type":"approval","id":"a1","description":"a person must say"}},{"await":"a1"},{"result":"done"}]}`, "--follow")
	follow.Env = []string{"AGENTMUX_NATS_USER=ops", "AGENTMUX_NATS_PASSWORD=" + s.passwords["ops"]}
	session := startProc(t, follow)
	id := waitPending(t, s, "t-person")
	if code, out, stderr := s.cli(t, "ops", "respond", "-c", s.manifest, id, "yes"); code != exitOK || !strings.Contains(out, "as ops") {
		t.Fatalf("ops respond: exit %d, %s %s", code, out, stderr)
	}
	if code := session.wait(t, 30*time.Second); code != exitOK {
		t.Fatalf("session: exit %d, %s", code, session.stderr)
	}
	if d := auditDecider(t, s, "t-person"); d != "human:ops" {
		t.Fatalf("the person's answer is recorded as %q, want human:ops", d)
	}
}

// waitPending returns the id of the request of session waiting for a person.
func waitPending(t *testing.T, s *secureNode, session string) string {
	t.Helper()
	var id string
	proctest.EventuallyWithin(t, 20*time.Second, "the request waiting for a person", func() bool {
		_, out, _ := s.cli(t, "view", "pending", "-c", s.manifest, "--json")
		for _, line := range strings.Split(out, "\n") {
			var rec struct{ ID, Session string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Session == session {
				id = rec.ID
			}
		}
		return id != ""
	})
	return id
}

// auditDecider is the decider and claim of the answer the audit holds for session, read
// by the viewer.
func auditDecider(t *testing.T, s *secureNode, session string) string {
	t.Helper()
	var decider string
	proctest.EventuallyWithin(t, 20*time.Second, "the answer's audit record", func() bool {
		_, out, _ := s.cli(t, "view", "audit", "-c", s.manifest, session, "--json")
		for _, line := range strings.Split(out, "\n") {
			var rec wire.AuditRecord
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Kind == "answer" {
				decider = rec.Decider
				if rec.Claimed != "" {
					decider += " claims " + rec.Claimed
				}
			}
		}
		return decider != ""
	})
	return decider
}

// TestSecureForgedDecider: an external supervisor's user answers its own asks, and
// what it claims is recorded apart; it can neither answer twice nor reach another
// supervisor's asks.
func TestSecureForgedDecider(t *testing.T) {
	t.Parallel()
	s := startSecureNode(t)
	pager, _, refused := s.conn(t, "pager")
	asks, err := pager.QueueSubscribeSync(wire.AskSubject("oncall"), "oncall")
	if err != nil {
		t.Fatal(err)
	}
	if err := pager.Flush(); err != nil {
		t.Fatal(err)
	}
	follow := exec.Command(os.Args[0], "submit", "-c", s.manifest, "--id", "t-forge", "w",
		`{"steps":[{"send":{"type":"approval","id":"a1","description":"deploy to prod"}},{"await":"a1"},{"result":"done"}]}`, "--follow")
	follow.Env = []string{"AGENTMUX_NATS_USER=ops", "AGENTMUX_NATS_PASSWORD=" + s.passwords["ops"]}
	session := startProc(t, follow)
	ask, err := asks.NextMsg(20 * time.Second)
	if err != nil {
		t.Fatalf("the ask never reached the supervisor: %v", err)
	}
	if err := ask.Respond([]byte(`{"value":"yes","decider":"human:alice","reason":"alice said so"}`)); err != nil {
		t.Fatal(err)
	}
	if code := session.wait(t, 30*time.Second); code != exitOK || !strings.Contains(session.stdout.String(), `"a1":{"value":"yes","outcome":"answered"`) {
		t.Fatalf("session: exit %d\n%s\n%s", code, session.stdout, session.stderr)
	}
	if d := auditDecider(t, s, "t-forge"); d != "external:oncall claims human:alice" {
		t.Fatalf("the answer is recorded as %q, want external:oncall claims human:alice", d)
	}
	// A second reply to the same ask is refused by the server.
	if err := ask.Respond([]byte(`{"value":"no","decider":"rule:security"}`)); err != nil {
		t.Fatal(err)
	}
	_ = pager.Flush()
	proctest.EventuallyWithin(t, 5*time.Second, "the second reply's refusal", func() bool { return context.Cause(refused) != nil })
	var perm *bus.PermissionError
	if !errors.As(context.Cause(refused), &perm) || !perm.Publish || perm.Subject != ask.Reply {
		t.Fatalf("a second reply: %v", context.Cause(refused))
	}
}

// TestSecureTaskQueuerIsWhatTheBusVouches plays an operator (an "opbot") that queues a
// task saying human:alice asked for it: the audit records the session as asked for by
// the operator, which is all the bus can vouch for, and alice as its claim; the same
// task on alice's subject is refused.
func TestSecureTaskQueuerIsWhatTheBusVouches(t *testing.T) {
	t.Parallel()
	s := startSecureNode(t)
	nc, js, refused := s.conn(t, "ops")
	ctx := context.Background()
	task, _ := json.Marshal(&wire.Task{ID: "t-claimed", Host: "w", Prompt: okScript, By: "human:alice"})
	if _, err := js.Publish(ctx, wire.TaskSubjectBy("w", "human:alice"), task, jetstream.WithMsgID("t-claimed-as-alice")); err == nil {
		t.Fatal("an operator queued a task on alice's subject")
	}
	_ = nc.Flush()
	var perm *bus.PermissionError
	proctest.EventuallyWithin(t, 5*time.Second, "the refusal", func() bool { return errors.As(context.Cause(refused), &perm) })
	if !perm.Publish || perm.Subject != wire.TaskSubjectBy("w", "human:alice") {
		t.Fatalf("queueing as alice: %v", context.Cause(refused))
	}
	if _, err := js.Publish(ctx, wire.TaskSubjectBy("w", "ops"), task, jetstream.WithMsgID("t-claimed")); err != nil {
		t.Fatal(err)
	}
	var start wire.AuditRecord
	proctest.EventuallyWithin(t, 20*time.Second, "the session's start in the audit", func() bool {
		_, out, _ := s.cli(t, "view", "audit", "-c", s.manifest, "t-claimed", "--json")
		for _, line := range strings.Split(out, "\n") {
			if json.Unmarshal([]byte(line), &start) == nil && start.Kind == "session.started" {
				return true
			}
		}
		return false
	})
	if start.By != "ops" || start.Claimed != "human:alice" {
		t.Errorf("the session's start is recorded by %q, claimed %q; want by ops, claimed human:alice", start.By, start.Claimed)
	}
	if _, out, _ := s.cli(t, "view", "audit", "-c", s.manifest, "t-claimed"); !strings.Contains(out, "(by ops, claims human:alice)") {
		t.Errorf("agentmux audit does not say who vouched and who is claimed:\n%s", out)
	}
}

// publishRequest publishes a request whose answers nobody reads, and flushes it: the
// server's refusal, if any, is then the connection's last error.
func publishRequest(nc *nats.Conn, subject, data string) error {
	if err := nc.PublishRequest(subject, nc.NewInbox(), []byte(data)); err != nil {
		return err
	}
	return nc.Flush()
}
