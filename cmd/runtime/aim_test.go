package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/wire"
)

// aimTargets are the subjects a node acts on that a reader of the bus would like to
// reach: every control verb, a person's answer to request id (in the operator's name and
// the viewer's), a supervisor's asks, and a session's events.
func aimTargets(id string) []string {
	var out []string
	for _, verb := range bus.CtlVerbs() {
		out = append(out, wire.CtlSubject(secureNodeName, verb))
	}
	return append(out, wire.RespondSubject("ops", id), wire.RespondSubject("view", id), wire.AskSubject("qa"),
		wire.EventSubject("w", "t-aim", "session.ended"))
}

// TestSecureReadersCannotAimTheBus plays a reader of the bus (viewer, operator, console)
// who tries to make the server deliver a stream's messages, or its own answers, to the
// subjects a node acts on: a push consumer's deliver_subject, and the reply subject of a
// direct get or an API request. Consumers are refused outright; what the server does
// deliver (and what a push consumer of the node's own role delivers) is refused by the
// handlers. The node is not drained, the session is not interrupted or steered, and the
// person's request still waits for a person.
func TestSecureReadersCannotAimTheBus(t *testing.T) {
	t.Parallel()
	s := startSecureNode(t)
	follow := exec.Command(os.Args[0], "submit", "-c", s.manifest, "--id", "t-aim", "w",
		`{"steps":[{"send":{"type":"approval","id":"a1","description":"a person must say"}},{"await":"a1"},{"result":"done"}]}`, "--follow")
	follow.Env = []string{"AGENTMUX_NATS_USER=ops", "AGENTMUX_NATS_PASSWORD=" + s.passwords["ops"]}
	session := startProc(t, follow)
	id := waitPending(t, s, "t-aim")
	targets := aimTargets(id)
	streams := []string{wire.AuditStream, "KV_" + wire.PendingBucket, "KV_" + wire.NodesBucket}
	// Readers read the work queue and the events' history too (tasks, logs); the node's own consumers on the queue
	// are its task pullers, and a push consumer there would take tasks, so it is tried
	// by the readers only.
	readerStreams := append(slices.Clone(streams), wire.TaskStream, wire.EventStream)

	// No reader makes a consumer, push or pull, in any form of the request.
	for _, user := range []string{"view", "ops", "desk"} {
		t.Run("consumer/"+user, func(t *testing.T) {
			var mu sync.Mutex
			refused := map[string]bool{}
			nc, err := bus.Connect(bus.Client{URL: s.url, Name: "aim-" + user, User: user,
				Identity: bus.Identity{User: user, Password: s.passwords[user]},
				OnRefusal: func(r *bus.PermissionError) {
					mu.Lock()
					refused[r.Subject] = true
					mu.Unlock()
				}})
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			var sent []string
			for _, stream := range readerStreams {
				for i, target := range targets {
					req := fmt.Sprintf(`{"stream_name":%q,"config":{"durable_name":"d%d","deliver_subject":%q,"ack_policy":"none","deliver_policy":"all","filter_subject":""}}`,
						stream, i, target)
					for _, api := range []string{"$JS.API.CONSUMER.CREATE." + stream, fmt.Sprintf("$JS.API.CONSUMER.CREATE.%s.d%d", stream, i),
						fmt.Sprintf("$JS.API.CONSUMER.DURABLE.CREATE.%s.d%d", stream, i)} {
						if err := nc.PublishRequest(api, nc.NewInbox(), []byte(req)); err != nil {
							t.Fatal(err)
						}
						sent = append(sent, api)
					}
				}
			}
			proctest.EventuallyWithin(t, 10*time.Second, "every consumer refused", func() bool {
				mu.Lock()
				defer mu.Unlock()
				for _, api := range sent {
					if !refused[api] {
						return false
					}
				}
				return true
			})
		})
	}
	node, njs, _ := s.conn(t, "machine")
	for _, stream := range streams {
		st, err := njs.Stream(context.Background(), stream)
		if err != nil {
			t.Fatal(err)
		}
		for name := range st.ListConsumers(context.Background()).Info() {
			if strings.HasPrefix(name.Config.DeliverSubject, "agentmux.") {
				t.Fatalf("stream %s has a consumer delivering to %s", stream, name.Config.DeliverSubject)
			}
		}
	}

	// What the server itself sends to a reply subject a reader chose: the answer of a
	// direct get (a node's heartbeat, a person's pending request) and of the API.
	for _, user := range []string{"view", "ops", "desk"} {
		nc, _, _ := s.conn(t, user)
		for _, target := range targets {
			for _, req := range []struct{ subject, body string }{
				{"$JS.API.DIRECT.GET.KV_" + wire.NodesBucket + ".$KV." + wire.NodesBucket + "." + secureNodeName, ``},
				{"$JS.API.DIRECT.GET.KV_" + wire.PendingBucket + ".$KV." + wire.PendingBucket + "." + id, ``},
				{"$JS.API.STREAM.INFO." + wire.AuditStream, ``},
				{"$JS.API.STREAM.MSG.GET." + wire.TaskStream, `{"seq":1}`},
				{"$JS.API.INFO", ``},
			} {
				if err := nc.PublishRequest(req.subject, target, []byte(req.body)); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := nc.LastError(); err != nil {
			t.Fatalf("%s's reads were refused: %v", user, err)
		}
	}

	// The node's own role may make a push consumer; the handlers still refuse what it
	// delivers: the audit's records of this session, the heartbeats, the request itself.
	for _, stream := range streams {
		for i, target := range targets {
			req := fmt.Sprintf(`{"stream_name":%q,"config":{"name":"n%d","deliver_subject":%q,"ack_policy":"none","deliver_policy":"all","idle_heartbeat":100000000,"flow_control":true,"inactive_threshold":60000000000}}`,
				stream, i, target)
			reply, err := node.Request(fmt.Sprintf("$JS.API.CONSUMER.CREATE.%s.n%d", stream, i), []byte(req), 10*time.Second)
			if err != nil || strings.Contains(string(reply.Data), `"error"`) {
				t.Fatalf("the node's push consumer on %s to %s: %v %s", stream, target, err, replyData(reply))
			}
		}
	}

	// Each handler met the forgeries and refused them.
	for _, want := range []struct{ log, subject string }{
		{"control request refused", wire.CtlSubject(secureNodeName, "drain")},
		{"control request refused", wire.CtlSubject(secureNodeName, "undrain")},
		{"control request refused", wire.CtlSubject(secureNodeName, "interrupt")},
		{"control request refused", wire.CtlSubject(secureNodeName, "message")},
		{"control request refused", wire.CtlSubject(secureNodeName, "list")},
		{"answer refused", wire.RespondSubject("ops", id)},
		{"answer refused", wire.RespondSubject("view", id)},
		{"refused", wire.AskSubject("qa")},
	} {
		proctest.EventuallyWithin(t, 20*time.Second, want.log+" on "+want.subject, func() bool {
			for _, line := range strings.Split(s.up.stderr.String(), "\n") {
				if strings.Contains(line, want.log) && strings.Contains(line, want.subject) {
					return true
				}
			}
			return false
		})
	}
	// The request still waits for a person, and a person's answer ends the session.
	if got := waitPending(t, s, "t-aim"); got != id {
		t.Fatalf("pending %q, want %q", got, id)
	}
	if code, out, stderr := s.cli(t, "ops", "respond", "-c", s.manifest, id, "yes"); code != exitOK {
		t.Fatalf("ops respond: exit %d, %s %s", code, out, stderr)
	}
	if code := session.wait(t, 30*time.Second); code != exitOK || !strings.Contains(session.stdout.String(), `"result"`) ||
		strings.Contains(session.stdout.String(), "interrupt") {
		t.Fatalf("session: exit %d\n%s\n%s", code, session.stdout, session.stderr)
	}
	// The node still takes tasks (it is not draining), and its supervisors answer.
	if code, out, stderr := s.cli(t, "ops", "submit", "-c", s.manifest, "--id", "t-after", "w", okScript, "--follow"); code != exitOK ||
		!strings.Contains(out, "all green") {
		t.Fatalf("a task after the attempts: exit %d\n%s\n%s", code, out, stderr)
	}
	code, out, stderr := s.cli(t, "view", "nodes", "-c", s.manifest, "--json")
	if code != exitOK || strings.Contains(out, `"draining":true`) || !strings.Contains(out, secureNodeName) {
		t.Fatalf("nodes: exit %d\n%s\n%s", code, out, stderr)
	}
	if d := auditDecider(t, s, "t-aim"); d != "human:ops" {
		t.Fatalf("the answer is recorded as %q, want human:ops", d)
	}
}

func replyData(m *nats.Msg) string {
	if m == nil {
		return ""
	}
	return string(m.Data)
}
