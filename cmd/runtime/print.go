package main

import (
	"encoding/json"
	"io"
	"strings"
)

// jsonLines prints each item as one JSON line (the --json form of the list commands).
func jsonLines[T any](w io.Writer, items []T) int {
	enc := json.NewEncoder(w)
	for _, it := range items {
		if err := enc.Encode(it); err != nil {
			return exitError
		}
	}
	return exitOK
}

// oneLine folds s's whitespace into single spaces and cuts it to at most n characters,
// marking the cut.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
