package main

import (
	"fmt"
	"strings"
)

// byPrefix is the one of ids that is id, or else the only one that starts with it: ""
// when none does, and an error naming up to five when several do. what names the ids in
// that error ("sessions'", "waiting requests'").
func byPrefix(ids []string, id, what string) (string, error) {
	var matches []string
	for _, s := range ids {
		if s == id {
			return s, nil
		}
		if strings.HasPrefix(s, id) {
			matches = append(matches, s)
		}
	}
	switch len(matches) {
	case 0:
		return "", nil
	case 1:
		return matches[0], nil
	}
	more := ""
	if len(matches) > 5 {
		more = fmt.Sprintf(" and %d more", len(matches)-5)
	}
	return "", &ambiguousPrefix{fmt.Sprintf("%q starts %d %s ids (%s%s): give more of it", id, len(matches), what, strings.Join(matches[:min(5, len(matches))], ", "), more)}
}

// ambiguousPrefix is the start of an id that starts several.
type ambiguousPrefix struct{ msg string }

func (e *ambiguousPrefix) Error() string { return e.msg }
