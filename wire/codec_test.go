package wire

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// appender is a record the request path appends without reflection.
type appender interface{ AppendJSON([]byte) []byte }

// sameAsEncodingJSON fails unless rec's AppendJSON decodes to what json.Marshal's
// output decodes to: the same fields, left out under the same conditions, with the same
// values.
func sameAsEncodingJSON(t *testing.T, rec appender) {
	t.Helper()
	want, err := json.Marshal(wireForm(rec))
	if err != nil {
		t.Fatal(err)
	}
	got := rec.AppendJSON([]byte("prefix"))
	if string(got[:6]) != "prefix" {
		t.Fatalf("AppendJSON overwrote what it appended to: %s", got)
	}
	got = got[6:]
	// Numbers compare as their text: a raw value may hold one no float64 holds.
	decode := func(b []byte) (map[string]any, error) {
		var m map[string]any
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		return m, d.Decode(&m)
	}
	g, err := decode(got)
	if err != nil {
		t.Fatalf("%T.AppendJSON wrote %s: %v", rec, got, err)
	}
	w, err := decode(want)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("%T.AppendJSON\n got  %s\n want %s", rec, got, want)
	}
}

// wireForm is what encoding/json marshals for rec: a Reply's wire form (replyJSON),
// since its own MarshalJSON is AppendJSON; any other record itself.
func wireForm(rec appender) any {
	if r, ok := rec.(*Reply); ok {
		return &replyJSON{Value: r.Value, UseDefault: r.Kind == ReplyDefault, Cancelled: r.Kind == ReplyCancelled, Decider: r.Decider,
			Reason: r.Reason, Member: r.Member, Claimed: r.Claimed, Scope: r.Scope, Grant: r.Grant}
	}
	return rec
}

// testSpend is a session's spend with every field set.
var testSpend = &Spend{InputTokens: 1, OutputTokens: 2, CacheReadTokens: 3, CacheWriteTokens: 4, CostUSD: 0.0125, Unpriced: []string{"local"},
	Models: []ModelSpend{{Model: "m", InputTokens: 1, OutputTokens: 2, CacheReadTokens: 3, CacheWriteTokens: 4, CostUSD: 0.0125, PricedBy: PricedByAgent}}}

func TestRecordsAppendAsTheirTagsSay(t *testing.T) {
	full := []appender{
		&Ask{Session: "s-1", Host: "w", Type: "approval", ID: "a<1>", Text: "rm -rf \"build\"\n", Timeout: 29_500, Deadline: 1764000000123,
			Default: json.RawMessage(`"no"`), Request: json.RawMessage(`{"type":"approval","id":"a<1>", "description":"rm"}`),
			PostProcess: true, Node: "n1", Attempt: 3,
			Conflicts: []WorkspaceConflict{{Paths: []string{"a.go"}, Session: "s-2", Host: "w", Node: "n2", Branch: "agentmux/s-2", Kind: TouchChanged, Time: 1}}},
		&Reply{Value: json.RawMessage(`{"a": [1, 2.5e-9, true, null]}`), Kind: ReplyDefault, Decider: "rule:x",
			Reason: "ünïcödé \u2028", Member: "n2", Claimed: "human:bo", Scope: "session", Grant: "g-h-1"},
		&AuditRecord{Kind: "answer", Time: 1764000000123, Node: "n", Host: "h", Session: "s", Attempt: 2, Pipeline: "p", Stage: "st",
			Request: "q1", Type: "question", Text: "Which?", Ask: json.RawMessage(`{"type":"question","question":"Which?"}`), By: "alice", Asked: 1764000000100, Value: json.RawMessage(`"x"`), Outcome: "answered", Decider: "static:d",
			Claimed: "c", Member: "m", Reason: "r", Given: json.RawMessage(`"y"`), GivenBy: "rule:g", Scope: "host", Latency: 0.123, Duration: 1e-7, Error: "e\x00", Truncated: 512,
			Workspace: &Workspace{Mode: "worktree", Branch: "agentmux/s", Base: "b", Head: "h", Files: 1}, Spend: testSpend},
		&RequestAnswered{ID: "q", Type: "question", Value: json.RawMessage(`["a","b"]`), Outcome: "invalid", Decider: "default",
			Claimed: "c", Reason: "no answer within 500ms", Latency: 12.5},
	}
	full = append(full,
		&SessionStarted{Session: "s", Host: "h", Task: "t", Node: "n", Attempt: 1, Pipeline: "p", Stage: "st"},
		&SessionEnded{Session: "s", Host: "h", Task: "t", Node: "n", Attempt: 2, Pipeline: "p", Stage: "st", Outcome: "ok",
			Result: json.RawMessage(`{"type":"result","text":"done <ok>","load":{"questions_us":[1,2]}}`), Data: json.RawMessage(`{"passed": true}`),
			Error: "e", Duration: 1234.5, Workspace: &Workspace{Mode: "clone", Branch: "agentmux/s", Base: "b", Head: "h", Dirty: true,
				Committed: true, Files: 2, Insertions: 3, Deletions: 4, Pushed: "origin", Mirror: "/m.git", Path: "/w", Bytes: 5, Error: "e"}, Spend: testSpend})
	for _, rec := range full {
		// Every field is set, so a field added to a type without its appender fails here.
		v := reflect.ValueOf(rec).Elem()
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() && f.Tag.Get("json") != "-" && v.Field(i).IsZero() {
				t.Errorf("%T.%s is not set in the test's full record: set it, so that its encoding is checked", rec, f.Name)
			}
		}
	}
	empty := []appender{&Ask{}, &Reply{}, &AuditRecord{}, &RequestAnswered{}, &SessionStarted{}, &SessionEnded{}}
	for _, rec := range append(full, empty...) {
		sameAsEncodingJSON(t, rec)
	}
}

// FuzzRecordsAppendAsTheirTagsSay: any strings and JSON values in any field.
func FuzzRecordsAppendAsTheirTagsSay(f *testing.F) {
	f.Add("s", "question", "Which <one>?", `"yes"`, 1.5, int64(3))
	f.Add("", "", "\xff\u2028", `{"a": 1}`, 0.0, int64(0))
	f.Fuzz(func(t *testing.T, s, typ, text, value string, latency float64, n int64) {
		raw := json.RawMessage(value)
		if !json.Valid(raw) {
			raw = nil // json.Marshal refuses a RawMessage that is not JSON
		}
		if latency != latency || latency > 1e300 || latency < -1e300 {
			latency = 0 // nor a NaN or an infinity
		}
		for _, rec := range []appender{
			&Ask{Session: s, Host: typ, Type: typ, ID: s, Text: text, Timeout: n / 3, Deadline: n, Default: raw, Request: raw, Node: text, Attempt: int(n % 1000)},
			&Reply{Kind: ReplyKind(uint64(n) % 3), Value: raw, Decider: typ, Reason: text, Member: s, Claimed: text, Scope: typ, Grant: s},
			&AuditRecord{Kind: typ, Time: n, Session: s, Text: text, Ask: raw, Asked: n, Value: raw, Reason: text, Latency: latency, Duration: latency},
			&RequestAnswered{ID: s, Type: typ, Value: raw, Decider: text, Reason: text, Latency: latency},
			&SessionStarted{Session: s, Host: typ, Task: text, Node: text, Attempt: int(n % 1000), Stage: typ},
			&SessionEnded{Session: s, Host: typ, Outcome: typ, Result: raw, Data: raw, Error: text, Duration: latency},
		} {
			sameAsEncodingJSON(t, rec)
		}
	})
}

// FuzzDecodeAsAsEncodingJSON: DecodeAsk and DecodeReply read anything as json.Unmarshal
// does: the same fields, or an error where it errs.
func FuzzDecodeAsAsEncodingJSON(f *testing.F) {
	for _, seed := range []string{
		`{"session":"s","host":"w","type":"question","id":"q","text":"Which?","timeout_ms":29500,"deadline":1764000000123,"default":"skip","request":{"type":"question"},"post_process":true,"node":"n","attempt":2}`,
		`{"value":"yes","use_default":false,"cancelled":null,"decider":"rule:x","reason":"r\u00e9","member":"n2","claimed":"c","scope":"session"}`,
		`{"use_default":true,"cancelled":true}`, `{"cancelled":true,"use_default":true,"use_default":false}`, `{"Cancelled":true}`,
		`{"Session":"folded","VALUE":1}`, `{"deadline":1.5}`, `{"attempt":"2"}`, `{"t\u0065xt":"escaped key"}`,
		`{"text":null,"deadline":null,"value":null}`, `[1]`, `"str"`, `{"a":1,"a":2}`, `{"type":"x","type":"y"}`, ` {"id" : "spaced" } `, `{`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var wantAsk Ask
		wantErr := json.Unmarshal(data, &wantAsk)
		gotAsk, err := DecodeAsk(data)
		if (err != nil) != (wantErr != nil) || err == nil && !reflect.DeepEqual(*gotAsk, wantAsk) {
			t.Fatalf("DecodeAsk(%s) = %+v, %v; json.Unmarshal: %+v, %v", data, gotAsk, err, wantAsk, wantErr)
		}
		var wantWire replyJSON
		wantErr = json.Unmarshal(data, &wantWire)
		wantReply := wantWire.reply()
		gotReply, err := DecodeReply(data)
		if (err != nil) != (wantErr != nil) || err == nil && !reflect.DeepEqual(gotReply, wantReply) {
			t.Fatalf("DecodeReply(%s) = %+v, %v; json.Unmarshal: %+v, %v", data, gotReply, err, wantReply, wantErr)
		}
	})
}

// TestReplyKindOnTheWire: a reply's kind travels as the wire has always had it, through
// encoding/json as through the codec; a reply saying both flags uses the default.
func TestReplyKindOnTheWire(t *testing.T) {
	for kind, want := range map[ReplyKind]string{
		ReplyValue:     `{"value":"yes","decider":"rule:x"}`,
		ReplyDefault:   `{"use_default":true,"decider":"rule:x"}`,
		ReplyCancelled: `{"cancelled":true,"decider":"rule:x"}`,
	} {
		r := Reply{Kind: kind, Decider: "rule:x"}
		if kind == ReplyValue {
			r.Value = json.RawMessage(`"yes"`)
		}
		got, err := json.Marshal(r)
		if err != nil || string(got) != want {
			t.Errorf("json.Marshal(kind %d) = %s, %v; want %s", kind, got, err, want)
		}
		var back Reply
		if err := json.Unmarshal(got, &back); err != nil || back.Kind != kind {
			t.Errorf("json.Unmarshal(%s) = kind %d, %v; want %d", got, back.Kind, err, kind)
		}
	}
	if r, err := DecodeReply([]byte(`{"cancelled":true,"use_default":true}`)); err != nil || r.Kind != ReplyDefault {
		t.Errorf("both flags: kind %d, %v; want the default", r.Kind, err)
	}
}
