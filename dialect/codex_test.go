package dialect

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/protocol"
)

func TestCodexHandshakeThreadTurnAndResult(t *testing.T) {
	d, _ := New(Codex, Options{Dir: "/repo"})
	if got := string(d.Prompt(protocol.Prompt{Text: "fix it", Session: "s1"})); !strings.Contains(got, `"method":"initialize"`) || strings.Contains(got, `"jsonrpc"`) {
		t.Fatalf("first line %s", got)
	}
	_, next := acpDecode(t, d, `{"id":1,"result":{"userAgent":"codex"}}`)
	if !strings.Contains(next, `{"method":"initialized"}`) || !strings.Contains(next, `"method":"thread/start"`) || !strings.Contains(next, `"approvalPolicy":"untrusted"`) {
		t.Fatalf("after initialize: %s", next)
	}
	_, turn := acpDecode(t, d, `{"id":2,"result":{"thread":{"id":"th1"},"model":"gpt-5.1-codex"}}`)
	if !strings.Contains(turn, `"method":"turn/start"`) || !strings.Contains(turn, `"threadId":"th1"`) || !strings.Contains(turn, `"text":"fix it"`) {
		t.Fatalf("after thread/start: %s", turn)
	}
	acpDecode(t, d, `{"id":3,"result":{"turn":{"id":"tu1"}}}`)
	if got := string(d.Interrupt("stop")); !strings.Contains(got, `"method":"turn/interrupt"`) || !strings.Contains(got, `"turnId":"tu1"`) {
		t.Fatalf("interrupt %s", got)
	}
	msg, _ := acpDecode(t, d, `{"method":"item/completed","params":{"item":{"type":"agentMessage","text":"Fixed."}}}`)
	if msg[0].Type != protocol.TypePartial || msg[0].Text != "Fixed." {
		t.Fatalf("message %+v", msg[0])
	}
	// The thread's running total: its model's, input without the cached part.
	used, _ := acpDecode(t, d, `{"method":"thread/tokenUsage/updated","params":{"threadId":"th1","turnId":"tu1","tokenUsage":{`+
		`"total":{"totalTokens":1500,"inputTokens":1200,"cachedInputTokens":200,"cacheWriteInputTokens":0,"outputTokens":300,"reasoningOutputTokens":100},`+
		`"last":{"totalTokens":500,"inputTokens":400,"cachedInputTokens":0,"cacheWriteInputTokens":0,"outputTokens":100,"reasoningOutputTokens":0},"modelContextWindow":272000}}}`)
	if u := used[0].Usage; used[0].Type != protocol.TypeUsage || u == nil || u.Model != "gpt-5.1-codex" || u.Input != 1000 || u.CacheRead != 200 ||
		u.Output != 300 || !u.Total || u.CostUSD != nil {
		t.Fatalf("token usage → %s", used[0].Raw)
	}
	end, _ := acpDecode(t, d, `{"method":"turn/completed","params":{"turn":{"id":"tu1","status":"completed"}}}`)
	if end[0].Type != protocol.TypeResult || end[0].Text != "Fixed." {
		t.Fatalf("end %+v", end[0])
	}
	failed, _ := acpDecode(t, d, `{"method":"turn/completed","params":{"turn":{"status":"failed","error":{"message":"model overloaded"}}}}`)
	if failed[0].Type != protocol.TypeError || failed[0].Message != "codex turn failed: model overloaded" {
		t.Fatalf("failed %+v", failed[0])
	}
}

func TestCodexApprovalsQuestionsAndResolved(t *testing.T) {
	d, _ := New(Codex, Options{Dir: "/repo"})
	a, _ := acpDecode(t, d, `{"id":0,"method":"item/commandExecution/requestApproval","params":{"command":"/bin/bash -lc 'make test'","cwd":"/repo","reason":"run the tests"}}`)
	if a[0].Type != protocol.TypeApproval || a[0].ID != "codex-0" || a[0].Description != "Run: /bin/bash -lc 'make test' (run the tests)" {
		t.Fatalf("approval %+v", a[0])
	}
	if got := string(d.Answer(a[0], protocol.Response{ID: "codex-0", Value: json.RawMessage(`"yes"`), Outcome: protocol.OutcomeAnswered}, "")); got != `{"id":0,"result":{"decision":"accept"}}`+"\n" {
		t.Fatalf("accept %s", got)
	}
	q, _ := acpDecode(t, d, `{"id":5,"method":"item/tool/requestUserInput","params":{"questions":[{"id":"alg","header":"Auth","question":"Which algorithm?","options":[{"label":"RS256"},{"label":"HS256"}]},{"id":"name","header":"Name","question":"Service name?"}]}}`)
	if len(q) != 2 || q[0].ID != "codex-5#alg" || q[0].EffectiveKind() != protocol.KindSelect || q[1].EffectiveKind() != protocol.KindPrompt {
		t.Fatalf("questions %+v", q)
	}
	if out := d.Answer(q[0], protocol.Response{ID: "codex-5#alg", Value: json.RawMessage(`"RS256"`), Outcome: protocol.OutcomeAnswered}, ""); out != nil {
		t.Fatalf("answered before the last question: %s", out)
	}
	got := string(d.Answer(q[1], protocol.Response{ID: "codex-5#name", Value: json.RawMessage(`"billing"`), Outcome: protocol.OutcomeAnswered}, ""))
	if !strings.Contains(got, `"alg":{"answers":["RS256"]}`) || !strings.Contains(got, `"name":{"answers":["billing"]}`) || !strings.Contains(got, `"id":5`) {
		t.Fatalf("answers %s", got)
	}
	acpDecode(t, d, `{"method":"item/started","params":{"item":{"id":"fc1","type":"fileChange","status":"inProgress","changes":[{"path":"/w/main.go","kind":{"type":"update"},"diff":"@@ -1 +1 @@\n-package x\n+package main"},{"path":"/w/util.go","kind":{"type":"add"},"diff":""}]}}}`)
	a2, _ := acpDecode(t, d, `{"id":7,"method":"item/fileChange/requestApproval","params":{"itemId":"fc1","reason":"edit main.go"}}`)
	if len(a2) != 1 || !strings.Contains(string(a2[0].Raw), `"paths":["/w/main.go","/w/util.go"]`) {
		t.Fatalf("a file change's approval does not name its files (from its item): %+v", a2)
	}
	if !strings.Contains(string(a2[0].Raw), `"changes":[{"path":"/w/main.go","diff":"@@ -1 +1 @@\n-package x\n+package main"},{"path":"/w/util.go"}]`) {
		t.Fatalf("a file change's approval does not carry its diff for the person: %s", a2[0].Raw)
	}
	w, _ := acpDecode(t, d, `{"method":"serverRequest/resolved","params":{"requestId":7}}`)
	if len(w) != 1 || w[0].Type != protocol.TypeWithdrawn || w[0].ID != "codex-7" {
		t.Fatalf("resolved %+v", w)
	}
	if out := d.Answer(a2[0], protocol.Response{ID: "codex-7", Outcome: protocol.OutcomeCancelled}, ""); out != nil {
		t.Fatalf("answered a resolved request: %s", out)
	}
	_, refusal := acpDecode(t, d, `{"id":9,"method":"account/chatgptAuthTokens/refresh","params":{}}`)
	if !strings.Contains(refusal, `"id":9`) || !strings.Contains(refusal, `-32601`) || strings.Contains(refusal, "jsonrpc") {
		t.Fatalf("refusal %s", refusal)
	}
}
