package console

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
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
	g := newGate("s3cret", "")
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
	if who := g.who(with(c.Value)); who != "bo" {
		t.Fatalf("who = %q", who)
	}
	forged := newGate("other", "").sign("bo", time.Now().Add(time.Hour))
	expired := g.sign("bo", time.Now().Add(-time.Second))
	payload, sum, _ := strings.Cut(c.Value, ".")
	for name, value := range map[string]string{"another token's": forged, "expired": expired, "garbage": "x.y", "empty": "",
		"tampered": payload + "x." + sum} {
		if who := g.who(with(value)); who != "" {
			t.Errorf("a %s cookie signs in as %q", name, who)
		}
	}
}

func TestSameOrigin(t *testing.T) {
	for _, c := range []struct {
		origin, site string
		want         bool
	}{
		{"http://127.0.0.1:9470", "", true},
		{"http://evil.example", "", false},
		{"null", "", false},
		{"", "same-origin", true},
		{"", "cross-site", false},
		{"", "", true}, // not a browser: curl, the CLI
	} {
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:9470/api/respond", nil)
		if c.origin != "" {
			r.Header.Set("Origin", c.origin)
		}
		if c.site != "" {
			r.Header.Set("Sec-Fetch-Site", c.site)
		}
		if got := sameOrigin(r); got != c.want {
			t.Errorf("origin %q site %q: %v", c.origin, c.site, got)
		}
	}
}
