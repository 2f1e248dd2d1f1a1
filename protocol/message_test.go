package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestDecodeTypes(t *testing.T) {
	for _, tc := range []struct {
		line  string
		typ   Type
		plain bool
	}{
		{`{"type":"progress","message":"half","percent":50}`, TypeProgress, false},
		{`{"type":"log","level":"info","message":"x"}`, TypeLog, false},
		{`{"type":"partial","text":"ab"}`, TypePartial, false},
		{`{"type":"heartbeat"}`, TypeHeartbeat, false},
		{`{"type":"question","question":"why?"}`, TypeQuestion, false},
		{`{"type":"approval","description":"rm"}`, TypeApproval, false},
		{`{"type":"tool_call","tool":"grep","args":{"q":1}}`, TypeToolCall, false},
		{`{"type":"result","text":"done"}`, TypeResult, false},
		{`{"type":"error","message":"boom"}`, TypeError, false},
		{`{"type":"init_ack","capabilities":["interrupt"]}`, TypeInitAck, false},
		{`{"type":"limit","retry_after_ms":60000,"message":"quota"}`, TypeLimit, false},
		{`{"type":"telemetry","x":1}`, TypeUnhandled, false},
		{`hello world`, TypeResult, true},
		{`[1,2]`, TypeResult, true},
		{`{"notype":1}`, TypeResult, true},
		{`{"type":5}`, TypeResult, true},
		{`{"type":5,"question":7}`, TypeResult, true},
	} {
		m, err := Decode([]byte(tc.line), PlainTextResult)
		if err != nil {
			t.Fatalf("Decode(%s): %v", tc.line, err)
		}
		if m.Type != tc.typ || m.PlainText != tc.plain {
			t.Errorf("Decode(%s) = %s plain=%v; want %s plain=%v", tc.line, m.Type, m.PlainText, tc.typ, tc.plain)
		}
		if !json.Valid(m.Raw) {
			t.Errorf("Decode(%s).Raw is not JSON: %s", tc.line, m.Raw)
		}
	}
}

func TestDecodePlainTextKeepsTheLine(t *testing.T) {
	m, _ := Decode([]byte(`the answer is "42"`), PlainTextResult)
	var got struct{ Type, Text string }
	if err := json.Unmarshal(m.Raw, &got); err != nil || got.Type != "result" || got.Text != `the answer is "42"` {
		t.Fatalf("raw = %s (%v)", m.Raw, err)
	}
	m, _ = Decode([]byte(`starting up`), PlainTextLog)
	if m.Type != TypeLog || m.Message != "starting up" {
		t.Fatalf("plain_text=log gave %s %q", m.Type, m.Message)
	}
}

func TestDecodeInvalidFrames(t *testing.T) {
	for _, tc := range []struct{ line, reason string }{
		{"{\"type\":\"progress\",\"message\":\"\xff\"}", "invalid_utf8"},
		{`{"type":"progress",`, "invalid_json"},
		{`{"type":"result","type":"error"}`, "duplicate_key"},
		{`{"type":"question","id":"a","id":"b","question":"q"}`, "duplicate_key"},
		{`{"type":"question","question":17}`, "bad_field"},
		{`{"type":"question"}`, "bad_field"},
		{`{"type":"limit","message":"no wait"}`, "bad_field"},
		{`{"type":"limit","retry_after_ms":0}`, "bad_field"},
		{`{"type":"tool_call","args":{}}`, "bad_field"},
		{`{"type":"question","question":"q","options":[{"description":"no value"}]}`, "bad_field"},
		{`{"type":"question","question":"q","id":{"x":1}}`, "bad_field"},
	} {
		_, err := Decode([]byte(tc.line), PlainTextResult)
		var inv *InvalidFrameError
		if !errors.As(err, &inv) || inv.Reason != tc.reason {
			t.Errorf("Decode(%q) error = %v; want an invalid frame (%s)", tc.line, err, tc.reason)
		}
	}
}

func TestDecodeFields(t *testing.T) {
	m, err := Decode([]byte(`{"type":"question","id":7,"question":"Pick","kind":"select","multi":true,
		"options":["a",{"value":"b","label":"Bee"},{"label":"c"}],"timeout_ms":1500,"extra":{"kept":true}}`), PlainTextResult)
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != "7" || m.Question != "Pick" || m.EffectiveKind() != KindSelect || !m.Multi || m.Timeout != 1500 {
		t.Fatalf("fields: %+v", m)
	}
	if len(m.Options) != 3 || m.Options[1].Value != "b" || m.Options[2].Value != "c" {
		t.Fatalf("options: %+v", m.Options)
	}
	var raw map[string]any
	if err := json.Unmarshal(m.Raw, &raw); err != nil || raw["extra"] == nil {
		t.Fatalf("unknown fields must be kept in Raw: %s", m.Raw)
	}
	m, _ = Decode([]byte(`{"type":"partial","chunk":"con"}`), PlainTextResult)
	if m.Text != "con" {
		t.Fatalf("Concerto chunk not taken as text: %q", m.Text)
	}
	m, _ = Decode([]byte(`{"type":"question","question":"q","kind":"design"}`), PlainTextResult)
	if m.Kind != "design" || m.EffectiveKind() != KindPrompt {
		t.Fatalf("unknown kind: %q → %q", m.Kind, m.EffectiveKind())
	}
}

func TestWithIDInjectsAssignedID(t *testing.T) {
	m, _ := Decode([]byte(`{"type":"question","question":"q"}`), PlainTextResult)
	var got map[string]any
	if err := json.Unmarshal(m.WithID("question-1"), &got); err != nil || got["id"] != "question-1" || got["question"] != "q" {
		t.Fatalf("WithID = %s (%v)", m.WithID("question-1"), err)
	}
	m, _ = Decode([]byte(`{"type":"question","question":"q","id":"mine"}`), PlainTextResult)
	if string(m.WithID("question-9")) != string(m.Raw) {
		t.Fatal("WithID must keep the agent's own id")
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"type":"question","question":"q","options":["a"]}`, `plain`, `{"type":1}`, `{"type":"x","type":"y"}`, "{\"id\":null,\"type\":\"approval\"}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		for _, mode := range []PlainText{PlainTextResult, PlainTextLog} {
			m, err := Decode(line, mode)
			if err != nil {
				var inv *InvalidFrameError
				if !errors.As(err, &inv) {
					t.Fatalf("error is not an InvalidFrameError: %v", err)
				}
				continue
			}
			if !json.Valid(m.Raw) {
				t.Fatalf("Raw is not JSON: %q", m.Raw)
			}
			if m.Type.IsRequest() && !json.Valid(m.WithID("x-1")) {
				t.Fatalf("WithID is not JSON: %q", m.WithID("x-1"))
			}
		}
	})
}

// decodeFull is Decode without its fast path.
func decodeFull(t *testing.T, line []byte) (*Message, error) {
	t.Helper()
	trimmed := bytes.TrimSpace(line)
	var w wire
	err := json.Unmarshal(trimmed, &w)
	var typeErr *json.UnmarshalTypeError
	if err != nil && !errors.As(err, &typeErr) {
		return nil, err
	}
	var name string
	if len(w.Type) == 0 || w.Type[0] != '"' || json.Unmarshal(w.Type, &name) != nil {
		return nil, errors.New("plain")
	}
	if typeErr != nil {
		return nil, typeErr
	}
	if err := checkDuplicates(trimmed); err != nil {
		return nil, err
	}
	m := &Message{Type: canonical(name), Name: name, Raw: bytes.Clone(trimmed)}
	return m, m.fill(&w)
}

// FuzzDecodeFast: the fast paths (decodeFast, StreamLine) agree with the full decoder on
// every line they accept.
func FuzzDecodeFast(f *testing.F) {
	for _, s := range []string{
		`{"type":"progress","message":"a","percent":3}`, `{"type":"partial","text":"a\nb"}`, `{"type":"partial","chunk":"c"}`,
		`{"type":"log","message":{"k":[1,"]"]}}`, `{ "type" : "heartbeat" , "x" : [ {} , "}" ] }`, `{"type":"progress","id":1}`,
		`{"type":"partial","text":1}`, `{"type":"progress","type":"log"}`, `{"typ\u0065":"progress"}`, `{"type":"prog\u0072ess"}`,
		`{"type":"question","id":"q7","kind":"select","question":"Which suite?","options":["unit",{"value":"e2e","label":"End to end"}],"timeout_ms":5000,"default":"unit"}`,
		`{"type":"approval","id":3,"description":"rm -rf build","risk_level":"high","multi":null,"context":{"cwd":"/"},"args":[1, 2]}`,
		`{"type":"tool_call","tool":"lookup","args":{"user":"ana"},"timeout_ms":null,"x":1}`, `{"type":"question","question":""}`,
		`{"type":"question","question":"a","Question":"b"}`, `{"type":"question","question":"a","options":[{"label":""}]}`,
		`{"type":"question","question":"a","timeout_ms":-1}`, `{"type":"question","question":"a","multi":true,"multi":null}`,
		`{"type":"checkpoint","state":{"step":2,"notes":["a","}"]}}`, `{"state":"s","type":"checkpoint"}`, `{"type":"checkpoint","state":null}`,
		`{"type":"checkpoint","state":1,"state":2}`, `{"type":"checkpoint","State":1}`, `{"type":"checkpoint","state":[1,}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if typ, raw, ok := StreamLine(line); ok {
			m, err := Decode(line, PlainTextResult)
			if err != nil || m.Type != typ || !bytes.Equal(m.Raw, raw) || m.Type.IsRequest() || m.Type == TypePartial {
				t.Fatalf("StreamLine(%q) = %s %q; Decode says %+v, %v", line, typ, raw, m, err)
			}
		}
		trimmed := bytes.TrimSpace(line)
		if len(trimmed) == 0 || trimmed[0] != '{' || !utf8.Valid(trimmed) {
			return
		}
		if req, ok := decodeRequestFast(trimmed); ok {
			full, err := decodeFull(t, trimmed)
			if err != nil {
				t.Fatalf("the request path accepted %q, the full decoder says %v", line, err)
			}
			if !reflect.DeepEqual(req, full) {
				t.Fatalf("%q:\nfast %+v\nfull %+v", line, req, full)
			}
		}
		if cp, ok := decodeCheckpointFast(trimmed); ok {
			full, err := decodeFull(t, trimmed)
			if err != nil {
				t.Fatalf("the checkpoint path accepted %q, the full decoder says %v", line, err)
			}
			if !reflect.DeepEqual(cp, full) {
				t.Fatalf("%q:\nfast %+v\nfull %+v", line, cp, full)
			}
		}
		fast, ok := decodeFast(trimmed)
		if !ok {
			return
		}
		full, err := decodeFull(t, trimmed)
		if err != nil {
			t.Fatalf("fast path accepted %q, the full decoder says %v", line, err)
		}
		if fast.Type != full.Type || fast.Name != full.Name || fast.Text != full.Text || !bytes.Equal(fast.Raw, full.Raw) {
			t.Fatalf("%q: fast %+v, full %+v", line, fast, full)
		}
	})
}

// BenchmarkDecodeCheckpoint is what reading a native agent's checkpoint line of a 16 KiB
// state costs.
func BenchmarkDecodeCheckpoint(b *testing.B) {
	line := []byte(`{"type":"checkpoint","state":{"notes":"` + strings.Repeat("the spec says so; ", 16<<10/18) + `","step":3}}`)
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if m, err := Decode(line, PlainTextResult); err != nil || len(m.State) < 16<<10 {
			b.Fatal(m, err)
		}
	}
}
