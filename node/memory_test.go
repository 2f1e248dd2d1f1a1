package node

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nuid"
)

// TestLLMMemoryIsSharedByTheMembers: a session's first question is answered by one
// member of an llm supervisor, which then stops; another member, on another node,
// answers the session's next question with the first exchange in its conversation.
func TestLLMMemoryIsSharedByTheMembers(t *testing.T) {
	t.Setenv("AGENTMUX_TEST_MODEL_KEY", "sk-test")
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(body))
		mu.Unlock()
		q, _ := json.Marshal(`{"answer":"Postgres","reason":"the team runs it already","risk_level":"low"}`)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","created":1,"model":"fake-1","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`, q)
	}))
	t.Cleanup(srv.Close)
	supervisors := fakeConnection(srv.URL) + `
[supervisors.architect]
strategy = "llm"
connection = "fake"
memory = "session"
[[routes]]
supervisor = "architect"
`
	t.Setenv("T_PEER_PASSWORD", nuid.Next())
	agents := start(t, simHost("w", "")+supervisors+peerUser, func(o *Options) { o.NoSupervisors = true })
	member := func() *Node {
		f := start(t, peerOf(agents)+simHost("w", "")+supervisors,
			func(o *Options) {
				o.NoHosts, o.Ephemeral, o.Name = true, false, "member-"+nuid.Next()
			})
		return f.n
	}
	ask := func(question string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := agents.n.Run(ctx, "w", "s-memory", script(send(`{"type":"question","id":"q1","question":"`+question+`"}`), await("q1"), result))
		if err != nil || !res.OK || record(res, "q1").Decider != "llm:architect/fake-1" {
			t.Fatalf("%s: %+v %v", question, res, err)
		}
	}
	first := member()
	ask("Which database?")
	if err := first.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	member()
	ask("Which driver for it?")
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 2 {
		t.Fatalf("%d model calls; want 2", len(bodies))
	}
	if !strings.Contains(bodies[1], "Which database?") || !strings.Contains(bodies[1], "the team runs it already") {
		t.Fatalf("the second member's conversation lacks the first member's exchange:\n%s", bodies[1])
	}
}
