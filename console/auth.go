package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentmux/agentmux/wire"
)

const (
	cookieName = "agentmux_console"
	signedIn   = 12 * time.Hour // how long a sign-in lasts
)

// Loopback reports whether addr (host:port) listens only on this machine.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// gate signs people in with the console's token and the name they give, or, on a
// console of one person (fixed), in that person's name.
type gate struct {
	token []byte
	key   []byte // signs the cookie: derived from the token, so a new token signs everyone out
	fixed string // the name every sign-in is in; "": the one the person gives
}

func newGate(token, fixed string) *gate {
	mac := hmac.New(sha256.New, []byte(token))
	mac.Write([]byte("agentmux console sign-in"))
	return &gate{token: []byte(token), key: mac.Sum(nil), fixed: fixed}
}

// newToken is a sign-in token of 128 bits, for a console with none of its own.
func newToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("console: a sign-in token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

func (g *gate) sign(name string, until time.Time) string {
	payload := name + "|" + strconv.FormatInt(until.Unix(), 10)
	mac := hmac.New(sha256.New, g.key)
	mac.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString([]byte(payload)) + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// who returns the name a request's cookie was signed for, or "" when it has none that
// is valid and current.
func (g *gate) who(r *http.Request) string {
	c, err := r.Cookie(cookieName)
	if err != nil {
		return ""
	}
	p, s, ok := strings.Cut(c.Value, ".")
	if !ok {
		return ""
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(p)
	sum, err2 := base64.RawURLEncoding.DecodeString(s)
	if err1 != nil || err2 != nil {
		return ""
	}
	mac := hmac.New(sha256.New, g.key)
	mac.Write(payload)
	if !hmac.Equal(sum, mac.Sum(nil)) {
		return ""
	}
	name, until, ok := strings.Cut(string(payload), "|")
	exp, err := strconv.ParseInt(until, 10, 64)
	if !ok || err != nil || time.Now().Unix() > exp || !wire.IsName(name) {
		return ""
	}
	return name
}

// What was wrong with a sign-in, by the code the page is sent back with.
var signInProblems = map[string]string{
	"name":      "Your name is what the audit records you as (human:<name>): use letters, digits, '_' and '-'.",
	"token":     "That token is not the console's (AGENTMUX_CONSOLE_TOKEN).",
	"throttled": "Too many sign-ins from here: wait a few seconds and try again.",
}

// signIn checks a sign-in form; it returns the cookie to set, or what was wrong (a key
// of signInProblems).
func (g *gate) signIn(r *http.Request) (*http.Cookie, string) {
	name, token := strings.TrimSpace(r.FormValue("name")), r.FormValue("token")
	if g.fixed != "" {
		name = g.fixed
	}
	switch {
	case !wire.IsName(name):
		return nil, "name"
	case subtle.ConstantTimeCompare([]byte(token), g.token) != 1:
		return nil, "token"
	}
	until := time.Now().Add(signedIn)
	return &http.Cookie{Name: cookieName, Value: g.sign(name, until), Path: "/", Expires: until, HttpOnly: true,
		Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode}, ""
}

// securityHeaders are on every response: the page loads only its own files, runs no
// inline script, and cannot be framed.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin") // no-referrer would send "Origin: null" on the page's own posts
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
}

func errorf(w http.ResponseWriter, code int, format string, args ...any) {
	http.Error(w, fmt.Sprintf(format, args...), code)
}
