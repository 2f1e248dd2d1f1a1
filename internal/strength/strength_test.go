package strength

import (
	"strings"
	"testing"
)

func TestBits(t *testing.T) {
	for token, strong := range map[string]bool{
		"s3cret-token":                     false,
		"x":                                false,
		strings.Repeat("a", 200):           false, // one character, however long
		strings.Repeat("ab", 50):           false, // two characters: a bit each
		"9f86d081884c7d659a2feaa0c55ad015": true,  // openssl rand -hex 16
		"0123456789abcdef0123456789abcdef": false, // a run, then the same again
		"Password123Password123!":          false, // a word, a run, then the same again
		"3q2+7wAbC9/xYzP1qRsT4u":           true,  // openssl rand -base64 16, 22 characters
		"correct-horse-battery":            false,
	} {
		if err := Check("the token", token); (err == nil) != strong {
			t.Errorf("token %q (%.0f bits): strong %v, err %v", token, Bits(token), err == nil, err)
		}
	}
	if err := Check("the token", "short"); err == nil || !strings.Contains(err.Error(), "openssl rand -hex 16") {
		t.Fatalf("a weak token's error says what to do: %v", err)
	}
}
