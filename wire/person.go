package wire

import (
	"regexp"
	"strings"
)

// personDot is how a person's dot is written in a subject's token (RespondSubject):
// a person's name holds no '%', so it reads back unambiguously.
const personDot = "%2E"

// maxPerson bounds a person's name: an email address's length.
const maxPerson = 254

var personPattern = regexp.MustCompile(`^[A-Za-z0-9_+@-][A-Za-z0-9_+@.-]*$`)

// IsPerson reports whether s may name a person who answers requests (human:<s>): a
// name (IsName) or an email address such as an identity provider vouches for.
func IsPerson(s string) bool { return len(s) <= maxPerson && personPattern.MatchString(s) }

// personFirst is prefix, the person name as a subject's token, and id: a subject only
// that user may publish on (an answer, a revocation). personSubject puts the person last.
func personFirst(prefix, name, id string) string {
	return prefix + strings.ReplaceAll(name, ".", personDot) + "." + id
}

// parsePersonFirst splits a personFirst subject of prefix into the person and the id.
func parsePersonFirst(prefix, subject string) (user, id string, ok bool) {
	rest, found := strings.CutPrefix(subject, prefix)
	if !found {
		return "", "", false
	}
	user, id, ok = strings.Cut(rest, ".")
	user = strings.ReplaceAll(user, personDot, ".")
	return user, id, ok && user != "" && id != ""
}
