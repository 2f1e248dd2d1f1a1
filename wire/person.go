package wire

import "regexp"

// personDot is how a person's dot is written in a subject's token (RespondSubject):
// a person's name holds no '%', so it reads back unambiguously.
const personDot = "%2E"

// maxPerson bounds a person's name: an email address's length.
const maxPerson = 254

var personPattern = regexp.MustCompile(`^[A-Za-z0-9_+@-][A-Za-z0-9_+@.-]*$`)

// IsPerson reports whether s may name a person who answers requests (human:<s>): a
// name (IsName) or an email address such as an identity provider vouches for.
func IsPerson(s string) bool { return len(s) <= maxPerson && personPattern.MatchString(s) }
