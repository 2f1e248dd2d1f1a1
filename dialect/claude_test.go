package dialect

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/protocol"
)

func decode(t *testing.T, d Dialect, line string) []*protocol.Message {
	t.Helper()
	msgs, _, err := d.Decode([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

func TestClaudeStreamToCanonical(t *testing.T) {
	d, _ := New(ClaudeCode, Options{Dir: "/tmp"})
	msgs := decode(t, d, `{"type":"assistant","message":{"content":[{"type":"text","text":"Hi"},{"type":"tool_use","name":"Read","input":{"file_path":"a.go"}}]},"session_id":"s"}`)
	if len(msgs) != 2 || msgs[0].Type != protocol.TypePartial || msgs[0].Text != "Hi" || msgs[1].Type != protocol.TypeProgress {
		t.Fatalf("assistant → %+v", msgs)
	}
	if !strings.Contains(string(msgs[0].Raw), `"raw":{"type":"assistant"`) {
		t.Fatalf("the vendor line is not kept: %s", msgs[0].Raw)
	}
	res := decode(t, d, `{"type":"result","subtype":"success","is_error":false,"result":"done","num_turns":3,"total_cost_usd":0.01,"session_id":"s"}`)
	if len(res) != 2 || res[1].Type != protocol.TypeResult || res[1].Text != "done" || !strings.Contains(string(res[1].Raw), `"num_turns":3`) || !strings.Contains(string(res[1].Raw), `"session_id":"s"`) {
		t.Fatalf("result → %v", res)
	}
	if u := res[0].Usage; res[0].Type != protocol.TypeUsage || u == nil || *u.CostUSD != 0.01 || !u.Total || u.Model != "" {
		t.Fatalf("a result with a cost and no modelUsage → %s; want a usage total of its cost first", res[0].Raw)
	}
	fail := decode(t, d, `{"type":"result","subtype":"error_max_turns","is_error":true,"result":""}`)
	if fail[0].Type != protocol.TypeError || fail[0].Message != "claude-code ended with error_max_turns" {
		t.Fatalf("error result → %+v", fail[0])
	}
	if u := decode(t, d, `{"type":"stream_event"}`); u[0].Type != protocol.TypeUnhandled {
		t.Fatalf("unknown → %+v", u[0])
	}
}

// TestClaudeResultUsage: a result's modelUsage, each model's total in the run so far,
// is a usage total per model, before the result that ends the session (or the error).
func TestClaudeResultUsage(t *testing.T) {
	d, _ := New(ClaudeCode, Options{Dir: "/tmp"})
	for _, end := range []struct {
		line string
		typ  protocol.Type
	}{
		{`{"type":"result","subtype":"success","is_error":false,"result":"done","total_cost_usd":0.0421,"usage":{"input_tokens":3},"modelUsage":{` +
			`"claude-sonnet-4-5":{"inputTokens":1200,"outputTokens":340,"cacheReadInputTokens":9000,"cacheCreationInputTokens":700,"webSearchRequests":0,"costUSD":0.0401,"contextWindow":200000},` +
			`"claude-haiku-4-5":{"inputTokens":80,"outputTokens":20,"cacheReadInputTokens":0,"cacheCreationInputTokens":0,"costUSD":0.002}}}`, protocol.TypeResult},
		{`{"type":"result","subtype":"error_max_budget_usd","is_error":true,"modelUsage":{` +
			`"claude-sonnet-4-5":{"inputTokens":1200,"outputTokens":340,"cacheReadInputTokens":9000,"cacheCreationInputTokens":700,"costUSD":0.0401},` +
			`"claude-haiku-4-5":{"inputTokens":80,"outputTokens":20,"costUSD":0.002}}}`, protocol.TypeError},
	} {
		msgs := decode(t, d, end.line)
		if len(msgs) != 3 || msgs[2].Type != end.typ {
			t.Fatalf("%s → %d messages; want two usage lines, then the %s", end.line, len(msgs), end.typ)
		}
		haiku, sonnet := msgs[0].Usage, msgs[1].Usage
		if haiku == nil || haiku.Model != "claude-haiku-4-5" || haiku.Input != 80 || haiku.Output != 20 || *haiku.CostUSD != 0.002 || !haiku.Total {
			t.Errorf("haiku's usage: %s", msgs[0].Raw)
		}
		if sonnet == nil || sonnet.Model != "claude-sonnet-4-5" || sonnet.Input != 1200 || sonnet.Output != 340 || sonnet.CacheRead != 9000 ||
			sonnet.CacheWrite != 700 || *sonnet.CostUSD != 0.0401 || !sonnet.Total {
			t.Errorf("sonnet's usage: %s", msgs[1].Raw)
		}
	}
}

func TestClaudeApprovalAllowDenyAndTimeout(t *testing.T) {
	d, _ := New(ClaudeCode, Options{Dir: "/tmp"})
	req := decode(t, d, `{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"rm -rf build","description":"clean"},"description":"clean"}}`)[0]
	if req.Type != protocol.TypeApproval || req.ID != "r1" || req.Description != "Bash: rm -rf build (clean)" {
		t.Fatalf("approval %+v", req)
	}
	allow := string(d.Answer(req, protocol.Response{ID: "r1", Value: json.RawMessage(`"yes"`), Outcome: protocol.OutcomeAnswered}, ""))
	if !strings.Contains(allow, `"behavior":"allow","updatedInput":{"command":"rm -rf build","description":"clean"}`) || !strings.Contains(allow, `"request_id":"r1"`) {
		t.Fatalf("allow: %s", allow)
	}
	req2 := decode(t, d, `{"type":"control_request","request_id":"r2","request":{"subtype":"can_use_tool","tool_name":"Write","input":{"file_path":"/etc/passwd"}}}`)[0]
	late := string(d.Answer(req2, protocol.Response{ID: "r2", Value: json.RawMessage(`"no"`), Outcome: protocol.OutcomeTimedOut}, "no answer within 5s"))
	if !strings.Contains(late, `"behavior":"deny","message":"No answer came within the deadline`) {
		t.Fatalf("timed-out deny: %s", late)
	}
}

func TestClaudeAskUserQuestionGroupAndWithdrawal(t *testing.T) {
	d, _ := New(ClaudeCode, Options{Dir: "/tmp"})
	qs := decode(t, d, `{"type":"control_request","request_id":"q","request":{"subtype":"can_use_tool","tool_name":"AskUserQuestion","input":{"questions":[
		{"question":"Which algorithm?","header":"Auth","multiSelect":false,"options":[{"label":"RS256"},{"label":"HS256"}]},
		{"question":"Which checks?","header":"CI","multiSelect":true,"options":[{"label":"lint"},{"label":"vet"}]}]}}}`)
	if len(qs) != 2 || qs[0].ID != "q#0" || qs[1].ID != "q#1" || !qs[1].Multi || qs[0].Options[1].Value != "HS256" || qs[0].EffectiveKind() != protocol.KindSelect {
		t.Fatalf("questions %+v", qs)
	}
	if out := d.Answer(qs[0], protocol.Response{ID: "q#0", Value: json.RawMessage(`"RS256"`), Outcome: protocol.OutcomeAnswered}, ""); out != nil {
		t.Fatalf("answered before the group is complete: %s", out)
	}
	out := string(d.Answer(qs[1], protocol.Response{ID: "q#1", Value: json.RawMessage(`["lint","vet"]`), Outcome: protocol.OutcomeAnswered}, ""))
	if !strings.Contains(out, `"answers":{"Which algorithm?":"RS256","Which checks?":"lint, vet"}`) || !strings.Contains(out, `"questions":[`) {
		t.Fatalf("group answer: %s", out)
	}

	req := decode(t, d, `{"type":"control_request","request_id":"r9","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"make"}}}`)[0]
	w := decode(t, d, `{"type":"control_cancel_request","request_id":"r9"}`)
	if len(w) != 1 || w[0].Type != protocol.TypeWithdrawn || w[0].ID != "r9" {
		t.Fatalf("withdrawal %+v", w)
	}
	if out := d.Answer(req, protocol.Response{ID: "r9", Value: nil, Outcome: protocol.OutcomeCancelled}, ""); out != nil {
		t.Fatalf("answered a withdrawn request: %s", out)
	}
}

func TestClaudeControlLines(t *testing.T) {
	d, _ := New(ClaudeCode, Options{Dir: "/tmp"})
	if got := string(d.Interrupt("stop")); !strings.Contains(got, `"request":{"subtype":"interrupt"}`) || !strings.HasSuffix(got, "\n") {
		t.Fatalf("interrupt %s", got)
	}
	if got := string(d.Prompt(protocol.Prompt{Text: "hello\nworld", Session: "s1"})); got != `{"message":{"content":"hello\nworld","role":"user"},"type":"user"}`+"\n" {
		t.Fatalf("prompt %s", got)
	}
	if _, err := New("gemini", Options{Dir: "/tmp"}); err == nil || !strings.Contains(err.Error(), `"gemini" is not available`) {
		t.Fatalf("unknown dialect: %v", err)
	}
	if d.Canonical() || d.Init() != nil {
		t.Fatal("Claude Code's protocol is its own, with no init of agentmux's")
	}
}

// TestClaudeLiveUsage: each model message's usage is counted as it arrives, once: the
// same message's later content blocks add only what grew. The result's totals then take
// their place, and a model counted live that the totals do not name is set to nothing,
// so no call counts twice.
func TestClaudeLiveUsage(t *testing.T) {
	d, _ := New(ClaudeCode, Options{Dir: "/tmp"})
	line := func(id, model string, out int, block string) string {
		return fmt.Sprintf(`{"type":"assistant","message":{"id":%q,"model":%q,"content":[%s],"usage":{"input_tokens":100,"cache_read_input_tokens":50,"output_tokens":%d}}}`, id, model, block, out)
	}
	var live []*protocol.Usage
	for _, l := range []string{
		line("msg_1", "claude-sonnet-4-5", 5, `{"type":"text","text":"I will"}`),
		line("msg_1", "claude-sonnet-4-5", 20, `{"type":"tool_use","name":"Bash","input":{"command":"ls"}}`),
		line("msg_1", "claude-sonnet-4-5", 20, `{"type":"text","text":"again"}`),
		line("msg_2", "claude-haiku-4-5", 7, `{"type":"text","text":"done"}`),
	} {
		for _, m := range decode(t, d, l) {
			if m.Type == protocol.TypeUsage {
				live = append(live, m.Usage)
			}
		}
	}
	if len(live) != 3 || live[0].Input != 100 || live[0].CacheRead != 50 || live[0].Output != 5 || live[1].Input != 0 || live[1].Output != 15 ||
		live[2].Model != "claude-haiku-4-5" || live[2].Output != 7 || live[0].Total || live[0].CostUSD != nil {
		t.Fatalf("live usage: %+v; want msg_1's 100/50/5, then its 15 more out, then msg_2's", live)
	}
	end := decode(t, d, `{"type":"result","subtype":"success","is_error":false,"result":"ok","modelUsage":{"claude-sonnet-4-5":{"inputTokens":100,"outputTokens":20,"cacheReadInputTokens":50,"costUSD":0.01}}}`)
	if len(end) != 3 || end[0].Usage.Model != "claude-haiku-4-5" || end[0].Usage.Tokens() != 0 || !end[0].Usage.Total ||
		end[1].Usage.Model != "claude-sonnet-4-5" || !end[1].Usage.Total || end[2].Type != protocol.TypeResult {
		t.Fatalf("the result's usage: %v", end)
	}
}
