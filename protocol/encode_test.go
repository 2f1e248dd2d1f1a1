package protocol

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestAppendResponse(t *testing.T) {
	line := AppendResponse(nil, Response{InReplyTo: TypeQuestion, ID: "q1", Value: json.RawMessage("{\n \"a\": \"x\\ny\"\n}"), Outcome: OutcomeAnswered})
	want := `{"type":"response","in_reply_to":"question","id":"q1","answer_to":"q1","value":{"a":"x\ny"},"outcome":"answered"}` + "\n"
	if string(line) != want {
		t.Fatalf("got  %s\nwant %s", line, want)
	}
	line = AppendResponse(nil, Response{InReplyTo: TypeApproval, ID: "a\"1", Outcome: OutcomeCancelled})
	if !strings.Contains(string(line), `"value":null`) || strings.Count(string(line), "\n") != 1 {
		t.Fatalf("cancelled response: %s", line)
	}
}

func TestPromptLines(t *testing.T) {
	if got := string(AppendPromptText(nil, "two\nlines\r\nhere")); got != "two lines here\n" {
		t.Fatalf("text prompt = %q", got)
	}
	var p struct{ Type, Text, Session string }
	if err := json.Unmarshal(AppendPrompt(nil, "hi\n", "s-1"), &p); err != nil || p.Type != "prompt" || p.Text != "hi\n" || p.Session != "s-1" {
		t.Fatalf("json prompt: %+v %v", p, err)
	}
	if got := string(AppendInit(nil, json.RawMessage(`{"model": "opus"}`))); got != `{"type":"init","params":{"model":"opus"}}`+"\n" {
		t.Fatalf("init = %q", got)
	}
}
