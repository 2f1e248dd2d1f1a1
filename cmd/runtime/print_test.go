package main

import (
	"testing"
	"unicode/utf8"
)

// TestOneLineCutsWholeCharacters: a request's text in a table is cut on a character,
// never inside one (it used to cut bytes, printing broken UTF-8 for "é" or "日本").
func TestOneLineCutsWholeCharacters(t *testing.T) {
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
