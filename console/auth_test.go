package console

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentmux/agentmux/config"
)

func TestLoopback(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:9470": true, "localhost:1": true, "[::1]:9470": true,
		"0.0.0.0:9470": false, ":9470": false, "10.0.0.5:9470": false, "console.example:443": false, "nonsense": false} {
		if got := Loopback(addr); got != want {
			t.Errorf("Loopback(%q) = %v", addr, got)
		}
	}
}

func TestSignInCookie(t *testing.T) {
	g := newGate("s3cret", "", nil)
	form := func(name, token string) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(url.Values{"name": {name}, "token": {token}}.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		return r
	}
	if c, why := g.signIn(form("bo", "guess")); c != nil || why != "token" {
		t.Fatalf("a wrong token: %v %q", c, why)
	}
	if c, why := g.signIn(form("bo bo", "s3cret")); c != nil || why != "name" {
		t.Fatalf("a name that cannot be a subject token: %v %q", c, why)
	}
	c, _ := g.signIn(form("bo", "s3cret"))
	if c == nil || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookie %+v", c)
	}
	with := func(value string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.AddCookie(&http.Cookie{Name: cookieName, Value: value})
		return r
	}
	if who := g.who(with(c.Value)); who == nil || who.name != "bo" || who.role != config.APIOperator {
		t.Fatalf("who = %+v", who)
	}
	operator := person{name: "bo", role: config.APIOperator}
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	forged := newGate("other", "", nil).cookie(r, operator, time.Now().Add(time.Hour)).Value
	expired := g.cookie(r, operator, time.Now().Add(-time.Second)).Value
	// A role the console does not know, and a person no subject could name.
	unknownRole := g.seal("bo", "admin", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
	badName := g.seal("bo bo", config.APIOperator, strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
	payload, sum, _ := strings.Cut(c.Value, ".")
	for name, value := range map[string]string{"another token's": forged, "expired": expired, "garbage": "x.y", "empty": "",
		"tampered": payload + "x." + sum, "unknown role's": unknownRole, "bad name's": badName} {
		if who := g.who(with(value)); who != nil {
			t.Errorf("a %s cookie signs in as %+v", name, who)
		}
	}
	// An email names a person; a console of the identity provider only takes no token.
	viewer := g.cookie(r, person{name: "alice.b@example.com", role: config.APIViewer}, time.Now().Add(time.Hour))
	if who := g.who(with(viewer.Value)); who == nil || who.name != "alice.b@example.com" || who.role != config.APIViewer {
		t.Fatalf("who = %+v", who)
	}
	if c, why := newGate("", "", derive("client secret", "x")).signIn(form("bo", "")); c != nil || why != "no-token" {
		t.Fatalf("a token sign-in on a console of the identity provider only: %v %q", c, why)
	}
}

// TestCrossSitePostsAreRefused: through the handler, a signed-in person's browser
// posting from another site (its Sec-Fetch-Site, or its Origin) is refused; the
// console's own page, and a client that is not a browser, are not.
func TestCrossSitePostsAreRefused(t *testing.T) {
	s := offline(t, newGate("s3cret", "", nil))
	cookie := s.gate.cookie(httptest.NewRequest(http.MethodGet, "/", nil), person{name: "bo", role: config.APIOperator}, time.Now().Add(time.Hour))
	for _, c := range []struct {
		origin, site string
		refused      bool
	}{
		{"http://127.0.0.1:9470", "", false},
		{"http://evil.example", "", true},
		{"null", "", true},
		{"", "same-origin", false},
		{"http://127.0.0.1:9470", "cross-site", true},
		{"", "same-site", true},
		{"", "", false}, // not a browser: curl, the CLI
	} {
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:9470/api/respond", strings.NewReader("{}"))
		r.AddCookie(cookie)
		if c.origin != "" {
			r.Header.Set("Origin", c.origin)
		}
		if c.site != "" {
			r.Header.Set("Sec-Fetch-Site", c.site)
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if refused := w.Code == http.StatusForbidden && strings.Contains(w.Body.String(), "another site"); refused != c.refused {
			t.Errorf("origin %q site %q: %d %s; refused %v, want %v", c.origin, c.site, w.Code, w.Body, refused, c.refused)
		}
	}
}
