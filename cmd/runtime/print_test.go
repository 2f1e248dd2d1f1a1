package main

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentmux/agentmux/wire"
)

// TestOneLineCutsWholeCharacters: a request's text in a table is cut on a character,
// never inside one (it used to cut bytes, printing broken UTF-8 for "é" or "日本").
func TestOneLineCutsWholeCharacters(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"two\n  lines\tand tabs", 30, "two lines and tabs"},
		{"déjà vu à la carte", 10, "déjà vu à…"},
		{"日本語のテキストです", 7, "日本語のテキ…"},
	} {
		got := oneLine(tc.in, tc.n)
		if got != tc.want || !utf8.ValidString(got) {
			t.Errorf("oneLine(%q, %d) = %q; want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

// TestPrintAuditShowsWhatAnAnswerStandsFor: an answer that is its request's one record
// shows what was asked before the answer; one after its request record shows the answer.
func TestPrintAuditShowsWhatAnAnswerStandsFor(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	records := []*wire.AuditRecord{
		{Kind: "answer", Time: 1764000000000, Request: "q1", Type: "question", Text: "Which db?", Asked: 1764000000000,
			Value: json.RawMessage(`"postgres"`), Outcome: "answered", Decider: "rule:db", Latency: 1, Node: "n1"},
		{Kind: "request", Time: 1764000000000, Request: "a1", Type: "approval", Text: "rm -rf build " + strings.Repeat("x", 100), Node: "n1"},
		{Kind: "answer", Time: 1764000060000, Request: "a1", Type: "approval", Value: json.RawMessage(`"no"`), Outcome: "answered", Decider: "human:ana", Latency: 60000, Node: "n1"},
	}
	printAudit(&b, records, false, false)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 4 || !strings.Contains(lines[1], `question: Which db? → "postgres" answered by rule:db in 1ms`) ||
		!strings.Contains(lines[2], "approval: rm -rf build") || !strings.Contains(lines[3], `"no" answered by human:ana in 60000ms`) ||
		strings.Contains(lines[3], "rm -rf") || !strings.HasSuffix(lines[2], "…") {
		t.Fatalf("audit table:\n%s", b.String())
	}
	// Wide: the node of each record, and nothing cut short.
	b.Reset()
	printAudit(&b, records, true, false)
	lines = strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], "NODE") || !strings.Contains(lines[2], " n1 ") ||
		!strings.Contains(lines[2], strings.Repeat("x", 100)) || !strings.Contains(lines[1], "2025-11-24T16:00:00.000Z") {
		t.Fatalf("wide audit table:\n%s", b.String())
	}
}
