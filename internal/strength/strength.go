package strength

import (
	"fmt"
	"math"
	"strings"
)

// Check says what is wrong with secret, a token people or programs sign in with, or
// nil; what names it in the error (AGENTMUX_CONSOLE_TOKEN, "the API token ci").
func Check(what, secret string) error {
	if bits := Bits(secret); bits < MinBits {
		return fmt.Errorf("%s carries about %.0f bits, and a token needs %d: use `openssl rand -hex 16` or longer", what, bits, MinBits)
	}
	return nil
}

// MinBits is the least a secret must carry: past guessing, throttled or not.
const MinBits = 128

// Bits estimates what token carries: what a guesser must find (guesses) times the
// bits of each character, from the classes of characters it uses (a random hex token of
// 32 characters: 128). A token of fewer than 8 different characters counts as one of
// those alone; a common word, a run or a repeat counts as one character, so a chosen
// password ("Password123Password123!") is refused where a random token passes.
func Bits(token string) float64 {
	var lower, upper, digit, other bool
	seen := map[rune]bool{}
	for _, r := range token {
		seen[r] = true
		switch {
		case r >= 'a' && r <= 'z':
			lower = true
		case r >= 'A' && r <= 'Z':
			upper = true
		case r >= '0' && r <= '9':
			digit = true
		default:
			other = true
		}
	}
	alphabet := 0
	for _, c := range []struct {
		used bool
		n    int
	}{{lower, 26}, {upper, 26}, {digit, 10}, {other, 32}} {
		if c.used {
			alphabet += c.n
		}
	}
	if len(seen) < 8 {
		alphabet = min(alphabet, len(seen))
	}
	if alphabet < 2 {
		return 0
	}
	return float64(guesses(token)) * math.Log2(float64(alphabet))
}

// commonWords are the words people build passwords of.
var commonWords = []string{"password", "passw0rd", "secret", "admin", "letmein", "welcome", "qwerty", "changeme",
	"agentmux", "console", "token", "master", "dragon", "monkey", "login", "hello", "iloveyou", "trustno1"}

// guesses counts what a guesser must find in token: a character each, but a common
// word (in any case), a run of three or more (aaa, abc, 321) or a part of three or more
// that came before counts as one.
func guesses(token string) int {
	r, lower := []rune(token), []rune(strings.ToLower(token))
	n := 0
	for i := 0; i < len(r); n++ {
		step := 1
		for _, w := range commonWords {
			if strings.HasPrefix(string(lower[i:]), w) {
				step = max(step, len([]rune(w)))
			}
		}
		for l := 3; i+l <= len(r) && strings.Contains(string(r[:i]), string(r[i:i+l])); l++ {
			step = max(step, l)
		}
		if i+2 < len(r) {
			d, l := r[i+1]-r[i], 2
			for d >= -1 && d <= 1 && i+l < len(r) && r[i+l]-r[i+l-1] == d {
				l++
			}
			if l >= 3 && d >= -1 && d <= 1 {
				step = max(step, l)
			}
		}
		i += step
	}
	return n
}
