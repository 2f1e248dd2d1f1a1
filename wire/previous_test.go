package wire

import (
	"encoding/json"
	"testing"
)

func TestPreviousFromAudit(t *testing.T) {
	if PreviousFromAudit(nil, 1) != nil {
		t.Fatal("no records: no earlier attempt")
	}
	records := []*AuditRecord{
		{Kind: "session.started", Attempt: 0},
		{Kind: "request", Attempt: 0, Request: "q1", Type: "question", Text: "Which db?"},
		{Kind: "answer", Attempt: 0, Request: "q1", Value: json.RawMessage(`"postgres"`), Outcome: "answered", Decider: "human:ana"},
		{Kind: "request", Attempt: 0, Request: "a1", Type: "approval", Text: "rm -rf build"},
		{Kind: "answer", Attempt: 0, Request: "a1", Value: json.RawMessage(`"no"`), Outcome: "timed_out", Decider: "default"},
		{Kind: "session.ended", Attempt: 0, Outcome: "error", Error: "agent exited without result (exit status 3)"},
		{Kind: "session.started", Attempt: 1},
		{Kind: "request", Attempt: 1, Request: "q1", Type: "question", Text: "Which db?"},
		{Kind: "answer", Attempt: 1, Request: "q1", Value: json.RawMessage(`"postgres"`), Outcome: "answered", Decider: "replay:human:ana"},
		// answered soon enough to be the request's one record
		{Kind: "answer", Attempt: 1, Request: "t1", Type: "tool_call", Text: "lookup", Asked: 1764000000000, Value: json.RawMessage(`{"rows":1}`), Outcome: "answered", Decider: "tool:lookup"},
		{Kind: "session.started", Attempt: 5}, // a later attempt than the one asking: ignored
	}
	p := PreviousFromAudit(records, 2)
	if p.Attempt != 1 || p.Error != "the node running it was gone before it ended" {
		t.Fatalf("previous %+v; want attempt 1, which never ended", p)
	}
	if len(p.Requests) != 2 || p.Requests[0].Decider != "human:ana" || p.Requests[0].Text != "Which db?" || p.Requests[0].Attempt != 0 ||
		p.Requests[1].Type != "tool_call" || string(p.Requests[1].Value) != `{"rows":1}` {
		t.Fatalf("requests %+v; want the person's answer once (not its replay, not the default) and the tool's", p.Requests)
	}
	if p := PreviousFromAudit(records, 1); p.Attempt != 0 || p.Error != "agent exited without result (exit status 3)" || len(p.Requests) != 1 {
		t.Fatalf("before attempt 1: %+v", p)
	}
}
