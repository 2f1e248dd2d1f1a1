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

	"github.com/agentmux/agentmux/config"
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

// person is who signed in, and what they may do (config.APIOperator or APIViewer).
type person struct {
	name string
	role string
}

// gate signs people in: with the console's token and the name they give, or, on a
// console of one person (fixed), in that person's name, or with the team's identity
// provider (oidc.go). Its cookie says who and in which role, signed with key.
type gate struct {
	token []byte // nil: no sign-in with a token
	key   []byte // signs the cookie: a new token or client secret signs everyone out
	fixed string // the name every token sign-in is in; "": the one the person gives
}

// newGate signs in with token; key, when not nil, signs the cookies in its place (the
// identity provider's client secret, the same on every console of a team).
func newGate(token, fixed string, key []byte) *gate {
	if key == nil {
		key = derive(token, "agentmux console sign-in")
	}
	g := &gate{key: key, fixed: fixed}
	if token != "" {
		g.token = []byte(token)
	}
	return g
}

// derive is a key for purpose from secret.
func derive(secret, purpose string) []byte {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(purpose))
	return mac.Sum(nil)
}

// newToken is a sign-in token of 128 bits, for a console with none of its own.
func newToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("console: a sign-in token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// seal signs fields (which hold no '|') to be read back by open.
func (g *gate) seal(fields ...string) string {
	payload := strings.Join(fields, "|")
	mac := hmac.New(sha256.New, g.key)
	mac.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString([]byte(payload)) + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// open returns the n fields value sealed, or nil when it is not g's, not n fields, or
// past the time its last field holds.
func (g *gate) open(value string, n int) []string {
	p, s, ok := strings.Cut(value, ".")
	if !ok {
		return nil
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(p)
	sum, err2 := base64.RawURLEncoding.DecodeString(s)
	if err1 != nil || err2 != nil {
		return nil
	}
	mac := hmac.New(sha256.New, g.key)
	mac.Write(payload)
	if !hmac.Equal(sum, mac.Sum(nil)) {
		return nil
	}
	fields := strings.Split(string(payload), "|")
	if len(fields) != n {
		return nil
	}
	exp, err := strconv.ParseInt(fields[n-1], 10, 64)
	if err != nil || time.Now().Unix() > exp {
		return nil
	}
	return fields
}

// cookie signs p in until then.
func (g *gate) cookie(r *http.Request, p person, until time.Time) *http.Cookie {
	return &http.Cookie{Name: cookieName, Value: g.seal(p.name, p.role, strconv.FormatInt(until.Unix(), 10)), Path: "/",
		Expires: until, HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode}
}

// who returns whom a request's cookie was signed for, or nil when it has none that is
// valid and current.
func (g *gate) who(r *http.Request) *person {
	c, err := r.Cookie(cookieName)
	if err != nil {
		return nil
	}
	f := g.open(c.Value, 3)
	if f == nil || !wire.IsPerson(f[0]) || (f[1] != config.APIOperator && f[1] != config.APIViewer) {
		return nil
	}
	return &person{name: f[0], role: f[1]}
}

// What was wrong with a sign-in, by the code the page is sent back with.
var signInProblems = map[string]string{
	"name":     "Your name is what the audit records you as (human:<name>): use letters, digits, '_' and '-'.",
	"token":    "That token is not the console's (AGENTMUX_CONSOLE_TOKEN).",
	"no-token": "This console signs people in with the team's identity provider only.",
	// Signing in with the identity provider (oidc.go); the console's log says more.
	"oidc-denied": "The identity provider did not sign you in.",
	"oidc-state":  "That sign-in was not started here, or took over ten minutes: sign in again.",
	"oidc-failed": "The sign-in with the identity provider failed; the console's log says why.",
	"oidc-name":   "The identity provider names you in a way agentmux cannot record (letters, digits, and _ + @ . - only).",
	"oidc-groups": "The identity provider signed you in, but none of your groups may use this console: ask to be added to one of its allowed_groups.",
	"throttled":   "Too many sign-ins from here: wait a few seconds and try again.",
}

// signIn checks a sign-in form; it returns the cookie to set, or what was wrong (a key
// of signInProblems).
func (g *gate) signIn(r *http.Request) (*http.Cookie, string) {
	name, token := strings.TrimSpace(r.FormValue("name")), r.FormValue("token")
	if g.fixed != "" {
		name = g.fixed
	}
	switch {
	case g.token == nil:
		return nil, "no-token"
	case !wire.IsName(name):
		return nil, "name"
	case subtle.ConstantTimeCompare([]byte(token), g.token) != 1:
		return nil, "token"
	}
	return g.cookie(r, person{name: name, role: config.APIOperator}, time.Now().Add(signedIn)), ""
}

// securityHeaders are on every response: the page loads only its own files, runs no
// inline script, and cannot be framed.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; manifest-src 'self'; worker-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin") // no-referrer would send "Origin: null" on the page's own posts
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
}

func errorf(w http.ResponseWriter, code int, format string, args ...any) {
	http.Error(w, fmt.Sprintf(format, args...), code)
}
