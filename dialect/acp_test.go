package dialect

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/protocol"
)

func acpDecode(t *testing.T, d Dialect, line string) ([]*protocol.Message, string) {
	t.Helper()
	msgs, reply, err := d.Decode([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	return msgs, string(reply)
}

func TestACPHandshakeThenPromptThenResult(t *testing.T) {
	d, _ := New(ACP, Options{Dir: "/repo"})
	if init := string(d.Prompt(protocol.Prompt{Text: "fix the bug", Session: "s1"})); !strings.Contains(init, `"method":"initialize"`) || !strings.Contains(init, `"id":1`) {
		t.Fatalf("first line %s", init)
	}
	_, next := acpDecode(t, d, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}`)
	if !strings.Contains(next, `"method":"session/new"`) || !strings.Contains(next, `"cwd":"/repo"`) {
		t.Fatalf("after initialize: %s", next)
	}
	_, prompt := acpDecode(t, d, `{"jsonrpc":"2.0","id":2,"result":{"sessionId":"abc","models":{"currentModelId":"gemini-2.5-pro","availableModels":[]}}}`)
	if !strings.Contains(prompt, `"method":"session/prompt"`) || !strings.Contains(prompt, `"text":"fix the bug"`) || !strings.Contains(prompt, `"sessionId":"abc"`) {
		t.Fatalf("after session/new: %s", prompt)
	}
	chunk, _ := acpDecode(t, d, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"abc","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Fixed."}}}}`)
	if chunk[0].Type != protocol.TypePartial || chunk[0].Text != "Fixed." {
		t.Fatalf("chunk %+v", chunk[0])
	}
	if got := string(d.Interrupt("stop")); !strings.Contains(got, `"method":"session/cancel"`) || strings.Contains(got, `"id"`) {
		t.Fatalf("interrupt %s", got)
	}
	cost, _ := acpDecode(t, d, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"abc","update":{"sessionUpdate":"usage_update","used":5300,"size":1000000,"cost":{"amount":0.031,"currency":"USD"}}}}`)
	if u := cost[0].Usage; u == nil || u.Model != "gemini-2.5-pro" || *u.CostUSD != 0.031 || !u.Total || u.HasTokens {
		t.Fatalf("usage_update → %s; want the session's cost so far, no tokens", cost[0].Raw)
	}
	credits, _ := acpDecode(t, d, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"abc","update":{"sessionUpdate":"usage_update","used":1,"size":2,"cost":{"amount":3,"currency":"credits"}}}}`)
	if credits[0].Type != protocol.TypeLog {
		t.Fatalf("a cost in credits → %s; want a log line, not dollars", credits[0].Raw)
	}
	end, _ := acpDecode(t, d, `{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn","usage":{"totalTokens":1700,"inputTokens":1200,"outputTokens":300,"cachedReadTokens":200}}}`)
	if len(end) != 2 || end[1].Type != protocol.TypeResult {
		t.Fatalf("end %+v", end)
	}
	if u := end[0].Usage; u == nil || u.Model != "gemini-2.5-pro" || u.Input != 1200 || u.Output != 300 || u.CacheRead != 200 || !u.Total || u.CostUSD != nil {
		t.Fatalf("the prompt response's usage → %s", end[0].Raw)
	}
	// A second session on the same process skips initialize.
	if again := string(d.Prompt(protocol.Prompt{Text: "next", Session: "s2"})); !strings.Contains(again, `"method":"session/new"`) {
		t.Fatalf("second session starts with %s", again)
	}
}

func TestACPPermissionsAndRefusals(t *testing.T) {
	d, _ := New(ACP, Options{Dir: "/repo"})
	msgs, _ := acpDecode(t, d, `{"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{"sessionId":"abc","toolCall":{"title":"rm build","kind":"execute","rawInput":{"command":"rm -rf build"}},
		"options":[{"optionId":"yes-once","name":"Allow","kind":"allow_once"},{"optionId":"no-once","name":"Reject","kind":"reject_once"}]}}`)
	req := msgs[0]
	if req.Type != protocol.TypeApproval || req.ID != "perm-7" || !strings.HasPrefix(req.Description, "rm build ") {
		t.Fatalf("approval %+v", req)
	}
	deny := string(d.Answer(req, protocol.Response{ID: "perm-7", Value: json.RawMessage(`"no"`), Outcome: protocol.OutcomeTimedOut}, ""))
	if !strings.Contains(deny, `"id":7`) || !strings.Contains(deny, `"optionId":"no-once"`) {
		t.Fatalf("deny %s", deny)
	}
	msgs, _ = acpDecode(t, d, `{"jsonrpc":"2.0","id":8,"method":"session/request_permission","params":{"toolCall":{"title":"edit","kind":"edit","locations":[{"path":"/w/a.go","line":3}]},"options":[{"optionId":"a","kind":"allow_always"},{"optionId":"r","kind":"reject_once"}]}}`)
	if !strings.Contains(string(msgs[0].Raw), `"paths":["/w/a.go"]`) {
		t.Fatalf("an edit's approval does not name the file of its location: %s", msgs[0].Raw)
	}
	cancelled := string(d.Answer(msgs[0], protocol.Response{ID: "perm-8", Outcome: protocol.OutcomeCancelled}, ""))
	if !strings.Contains(cancelled, `"outcome":{"outcome":"cancelled"}`) {
		t.Fatalf("cancelled %s", cancelled)
	}
	// Gemini CLI and claude-agent-acp offer "allow always" first: "yes" is the allow-once
	// option all the same, and "no" the reject-once one, so each call is asked again.
	msgs, _ = acpDecode(t, d, `{"jsonrpc":"2.0","id":9,"method":"session/request_permission","params":{"toolCall":{"title":"echo"},
		"options":[{"optionId":"proceed_always","kind":"allow_always"},{"optionId":"proceed_once","kind":"allow_once"},{"optionId":"never","kind":"reject_always"},{"optionId":"cancel","kind":"reject_once"}]}}`)
	if yes := string(d.Answer(msgs[0], protocol.Response{ID: "perm-9", Value: json.RawMessage(`"yes"`), Outcome: protocol.OutcomeAnswered}, "")); !strings.Contains(yes, `"optionId":"proceed_once"`) {
		t.Fatalf("yes picked %s; want the allow-once option", yes)
	}
	msgs, _ = acpDecode(t, d, `{"jsonrpc":"2.0","id":10,"method":"session/request_permission","params":{"toolCall":{"title":"echo"},
		"options":[{"optionId":"never","kind":"reject_always"},{"optionId":"cancel","kind":"reject_once"},{"optionId":"ok","kind":"allow_once"}]}}`)
	if no := string(d.Answer(msgs[0], protocol.Response{ID: "perm-10", Value: json.RawMessage(`"no"`), Outcome: protocol.OutcomeAnswered}, "")); !strings.Contains(no, `"optionId":"cancel"`) {
		t.Fatalf("no picked %s; want the reject-once option", no)
	}
	_, refusal := acpDecode(t, d, `{"jsonrpc":"2.0","id":"fs1","method":"fs/read_text_file","params":{"path":"/etc/passwd"}}`)
	if !strings.Contains(refusal, `"id":"fs1"`) || !strings.Contains(refusal, `"code":-32601`) {
		t.Fatalf("refusal %s", refusal)
	}
	failed, _ := acpDecode(t, d, `{"jsonrpc":"2.0","id":99,"error":{"code":-32000,"message":"auth required"}}`)
	if failed[0].Type != protocol.TypeError || !strings.Contains(failed[0].Message, "auth required") {
		t.Fatalf("error %+v", failed[0])
	}
}

func TestACPElicitationIsAQuestionWithTheFormsSchema(t *testing.T) {
	d, _ := New(ACP, Options{Dir: "/repo"})
	msgs, _ := acpDecode(t, d, `{"jsonrpc":"2.0","id":4,"method":"elicitation/create","params":{"message":"Deployment target?","requestedSchema":{"type":"object","properties":{"env":{"type":"string"}},"required":["env"]}}}`)
	q := msgs[0]
	if q.Type != protocol.TypeQuestion || q.ID != "elicit-4" || q.EffectiveKind() != protocol.KindCustom {
		t.Fatalf("question %+v", q)
	}
	if err := protocol.ValidateAnswer(q, json.RawMessage(`{"env":"staging"}`)); err != nil {
		t.Fatalf("a fitting answer fails the form's schema: %v", err)
	}
	got := string(d.Answer(q, protocol.Response{ID: "elicit-4", Value: json.RawMessage(`{"env":"staging"}`), Outcome: protocol.OutcomeAnswered}, ""))
	if !strings.Contains(got, `"result":{"action":"accept","content":{"env":"staging"}}`) {
		t.Fatalf("accept %s", got)
	}
	msgs, _ = acpDecode(t, d, `{"jsonrpc":"2.0","id":5,"method":"elicitation/create","params":{"message":"Anything?"}}`)
	if got := string(d.Answer(msgs[0], protocol.Response{ID: "elicit-5", Outcome: protocol.OutcomeTimedOut}, "")); !strings.Contains(got, `"action":"decline"`) {
		t.Fatalf("timed out %s", got)
	}
}

// An interrupt cancels the turn and answers the request still open as cancelled, as ACP
// asks of a client that cancels: Gemini CLI ends its turn only then.
func TestACPInterruptAnswersOpenRequests(t *testing.T) {
	d, _ := New(ACP, Options{Dir: "/repo"})
	_ = d.Prompt(protocol.Prompt{Text: "go", Session: "s1"})
	_, _ = acpDecode(t, d, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}`)
	_, _ = acpDecode(t, d, `{"jsonrpc":"2.0","id":2,"result":{"sessionId":"abc"}}`)
	msgs, _ := acpDecode(t, d, `{"jsonrpc":"2.0","id":11,"method":"session/request_permission","params":{"sessionId":"abc","toolCall":{"title":"rm"},"options":[{"optionId":"ok","kind":"allow_once"}]}}`)
	stop := string(d.Interrupt("stop"))
	if !strings.Contains(stop, `"method":"session/cancel"`) || !strings.Contains(stop, `{"id":11,"jsonrpc":"2.0","result":{"outcome":{"outcome":"cancelled"}}}`) {
		t.Fatalf("interrupt wrote %s; want the cancel and the open request answered cancelled", stop)
	}
	if late := d.Answer(msgs[0], protocol.Response{ID: msgs[0].ID, Value: json.RawMessage(`"yes"`), Outcome: protocol.OutcomeAnswered}, ""); late != nil {
		t.Fatalf("a late answer was written: %s", late)
	}
}

// Qwen Code's ask_user_question comes as a permission request carrying its questions:
// each is a question of agentmux's, and the reply, once all are answered, selects the
// allow-once option with the answers by index.
func TestACPQwenQuestions(t *testing.T) {
	d, _ := New(ACP, Options{Dir: "/repo"})
	msgs, _ := acpDecode(t, d, `{"jsonrpc":"2.0","id":4,"method":"session/request_permission","params":{"sessionId":"abc",
		"toolCall":{"title":"Questions","_meta":{"qwenInteractionKind":"user_question","qwenQuestions":[
			{"question":"Which algorithm?","header":"Auth","options":[{"label":"RS256","description":"a"},{"label":"HS256","description":"b"}]},
			{"question":"Which regions?","header":"Regions","multiSelect":true,"options":[{"label":"eu","description":""},{"label":"us","description":""}]}]}},
		"options":[{"optionId":"proceed_once","kind":"allow_once"},{"optionId":"cancel","kind":"reject_once"}]}}`)
	if len(msgs) != 2 || msgs[0].Type != protocol.TypeQuestion || msgs[0].Question != "Which algorithm?" || len(msgs[0].Options) != 2 || !msgs[1].Multi {
		t.Fatalf("questions %+v", msgs)
	}
	if first := d.Answer(msgs[0], protocol.Response{ID: msgs[0].ID, Value: json.RawMessage(`"RS256"`), Outcome: protocol.OutcomeAnswered}, ""); first != nil {
		t.Fatalf("replied before every question was answered: %s", first)
	}
	reply := string(d.Answer(msgs[1], protocol.Response{ID: msgs[1].ID, Value: json.RawMessage(`["eu","us"]`), Outcome: protocol.OutcomeAnswered}, ""))
	if !strings.Contains(reply, `"id":4`) || !strings.Contains(reply, `"optionId":"proceed_once"`) || !strings.Contains(reply, `"answers":{"0":"RS256","1":"eu, us"}`) {
		t.Fatalf("reply %s", reply)
	}
}
