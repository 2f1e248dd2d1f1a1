package attach

import (
	"bufio"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/goleak"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/internal/bustest"
	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, proctest.Leaks()...) }

// node plays what a node does around a Hub: Submit runs the source's bridge, as the
// router runs an in-process agent, and the node's side of its pipes answers each
// request the bridge writes with answer.
type node struct {
	t       *testing.T
	hub     *Hub
	conn    *nats.Conn
	answer  string // the value every request is answered
	mu      sync.Mutex
	started []string         // session, by, attempt of each Submit
	stdins  []*io.PipeWriter // the bridges' stdin, closed as a node stops its processes
	wg      sync.WaitGroup
}

func startHub(t *testing.T, maxSessions int) *node {
	t.Helper()
	m, err := config.Parse("agentmux.toml", []byte(`
[attached.laptops]
dialect = "claude-code"
max_sessions = `+itoa(maxSessions)+`
idle_timeout = "1m"
`))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	b := bustest.Open(t, "attach-test", log)
	n := &node{t: t, conn: b.Conn, answer: `"yes"`}
	n.hub = New(Config{Conn: b.Conn, JS: b.JS, Node: "n1", Sources: map[string]*config.Host{"laptops": m.Hosts["laptops"]},
		Submit: n.submit, Log: log})
	if err := n.hub.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		n.hub.Stop()
		n.mu.Lock()
		for _, w := range n.stdins {
			w.Close()
		}
		n.mu.Unlock()
		n.wg.Wait()
	})
	return n
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// submit starts session's process: the bridge, fed the session's prompt, whose
// requests are answered until the session ends.
func (n *node) submit(host, session, prompt, by string, attempt int) {
	toBridge, stdin := io.Pipe()
	n.mu.Lock()
	n.started = append(n.started, session+" "+by+" "+itoa(attempt))
	n.stdins = append(n.stdins, stdin)
	n.mu.Unlock()
	stdout, fromBridge := io.Pipe()
	n.wg.Add(2)
	go func() {
		defer n.wg.Done()
		_ = n.hub.Agent(host)(toBridge, fromBridge)
		fromBridge.Close()
	}()
	go func() {
		defer n.wg.Done()
		prompt, _ := json.Marshal(map[string]string{"type": "prompt", "session": session, "text": prompt})
		if _, err := stdin.Write(append(prompt, '\n')); err != nil {
			return
		}
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			var msg struct{ Type, ID string }
			if json.Unmarshal(lines.Bytes(), &msg) != nil {
				continue
			}
			if msg.Type == "result" || msg.Type == "error" {
				return
			}
			resp := `{"type":"response","id":"` + msg.ID + `","value":` + n.answer + `,"outcome":"answered"}` + "\n"
			if _, err := io.WriteString(stdin, resp); err != nil {
				return
			}
		}
	}()
}

// ask sends req as a hook does, through the console's subject, and decodes the reply.
func (n *node) ask(req wire.AttachRequest) wire.AttachReply {
	n.t.Helper()
	data, _ := json.Marshal(req)
	msg, err := n.conn.Request(wire.AttachSubject("laptops"), data, 10*time.Second)
	if err != nil {
		n.t.Fatalf("attach request: %v", err)
	}
	var r wire.AttachReply
	if err := json.Unmarshal(msg.Data, &r); err != nil {
		n.t.Fatalf("attach reply %q: %v", msg.Data, err)
	}
	return r
}

func approval(id string) json.RawMessage {
	return json.RawMessage(`{"type":"approval","id":"` + id + `","description":"Bash: ls","tool":"Bash","input":{"command":"ls"}}`)
}

// TestAHookIsAnsweredThroughItsSession: a hook's first request opens the session as
// its user's, at attempt 0; its requests are answered with the session's responses;
// another user's token cannot ask in it; its end ends it, and the next request opens it
// again as attempt 1.
func TestAHookIsAnsweredThroughItsSession(t *testing.T) {
	n := startHub(t, 4)
	r := n.ask(wire.AttachRequest{Session: "s-1", User: "alice", Request: approval("a1")})
	if r.Code != "" || string(r.Value) != `"yes"` || r.Outcome != "answered" || r.Attempt != 0 || r.Node != "n1" {
		t.Fatalf("the first request: %+v; want yes, answered, attempt 0, by n1", r)
	}
	if r := n.ask(wire.AttachRequest{Session: "s-1", User: "alice", Request: approval("a1")}); string(r.Value) != `"yes"` {
		t.Fatalf("a second request of the same id: %+v", r)
	}
	if r := n.ask(wire.AttachRequest{Session: "s-1", User: "mallory", Request: approval("a2")}); r.Code != wire.AttachForbidden ||
		!strings.Contains(r.Error, "belongs to alice") {
		t.Fatalf("another user's request in alice's session: %+v; want forbidden", r)
	}
	if r := n.ask(wire.AttachRequest{Session: "s-1", User: "alice", End: true, Event: "SessionEnd"}); r.Outcome != "ended" {
		t.Fatalf("the session's end: %+v", r)
	}
	proctest.Eventually(t, "the ended session to be let go", func() bool { return !n.hub.holds("laptops/s-1") })
	if r := n.ask(wire.AttachRequest{Session: "s-1", User: "mallory", Request: approval("a3")}); r.Code != wire.AttachForbidden ||
		!strings.Contains(r.Error, "was alice's") {
		t.Fatalf("another user opening alice's ended session: %+v; want forbidden", r)
	}
	if r := n.ask(wire.AttachRequest{Session: "s-1", User: "alice", Request: approval("a4")}); string(r.Value) != `"yes"` || r.Attempt != 1 {
		t.Fatalf("alice's session opened again: %+v; want answered as attempt 1", r)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if got := strings.Join(n.started, "; "); got != "s-1 alice 0; s-1 alice 1" {
		t.Errorf("sessions started %q; want alice's s-1 at attempts 0 and 1", got)
	}
}

// TestWhatAHubRefuses: what agentmux cannot decide, and a session beyond max_sessions,
// are refused with the reason, and open nothing.
func TestWhatAHubRefuses(t *testing.T) {
	n := startHub(t, 1)
	for _, c := range []struct {
		name string
		req  wire.AttachRequest
		code string
		err  string
		raw  string // sent in place of req, when set
	}{
		{"no session id", wire.AttachRequest{User: "alice", Request: approval("a")}, wire.AttachInvalid, `session id "" must be 1 to 128`, ""},
		{"a session id no subject takes", wire.AttachRequest{Session: "a.b", User: "alice", Request: approval("a")}, wire.AttachInvalid, `session id "a.b"`, ""},
		{"no user", wire.AttachRequest{Session: "s", Request: approval("a")}, wire.AttachInvalid, `user "" must be`, ""},
		{"a result, not a request", wire.AttachRequest{Session: "s", User: "alice", Request: json.RawMessage(`{"type":"result","text":"x"}`)},
			wire.AttachInvalid, `a request of type "result"`, ""},
		{"not JSON", wire.AttachRequest{}, wire.AttachInvalid, "attach: the request is not JSON", `{"session":"s","user":"alice","request":{"type":}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			data, _ := json.Marshal(c.req)
			if c.raw != "" {
				data = []byte(c.raw)
			}
			msg, err := n.conn.Request(wire.AttachSubject("laptops"), data, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			var r wire.AttachReply
			_ = json.Unmarshal(msg.Data, &r)
			if r.Code != c.code || !strings.Contains(r.Error, c.err) {
				t.Errorf("reply %+v; want %s, saying %q", r, c.code, c.err)
			}
		})
	}
	if r := n.ask(wire.AttachRequest{Session: "s-1", User: "alice", Request: approval("a1")}); string(r.Value) != `"yes"` {
		t.Fatalf("the one session max_sessions allows: %+v", r)
	}
	if r := n.ask(wire.AttachRequest{Session: "s-2", User: "alice", Request: approval("a1")}); r.Code != wire.AttachBusy ||
		!strings.Contains(r.Error, "its max_sessions") {
		t.Fatalf("a second session at max_sessions = 1: %+v; want busy", r)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.started) != 1 {
		t.Errorf("sessions started: %q; want only the first", n.started)
	}
}
