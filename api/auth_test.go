package api

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/wire"
)

const strong = "9f86d081884c7d659a2feaa0c55ad015"

// TestTokensAreCheckedAtStart: a weak token, or two of one name, stop the API before
// it serves, each saying which token and what to do.
func TestTokensAreCheckedAtStart(t *testing.T) {
	for _, c := range []struct {
		tokens []Token
		says   string
	}{
		{[]Token{{Name: "ci", Role: config.APIOperator, Secret: "Password123Password123!"}}, "the API token ci carries about"},
		{[]Token{{Name: "ci", Role: config.APIOperator, Secret: strong}, {Name: "ci", Role: config.APIViewer, Secret: strong + "0"}}, "two API tokens are named ci"},
	} {
		if _, err := New(Config{Tokens: c.tokens, Log: slog.New(slog.DiscardHandler)}); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("New with %d tokens: %v; want %q", len(c.tokens), err, c.says)
		}
	}
}

// signedIn is a page with one person signed in (their cookie is "bo") and nothing on it.
type signedIn struct{}

func (signedIn) Person(r *http.Request) (string, string, bool) {
	if c, err := r.Cookie("who"); err == nil && c.Value == "bo" {
		return "bo", config.APIOperator, true
	}
	return "", "", false
}
func (signedIn) Sessions() []*wire.SessionRow    { return []*wire.SessionRow{} }
func (signedIn) Pending() []*wire.PendingRequest { return []*wire.PendingRequest{} }

// TestCallers plays the API's callers that never reach the bus: no token, a wrong one
// (until its address is throttled), a role that may not write, a person of the page
// writing from another site. Each is refused with the API's error; the page's own
// person and a viewer's read are served.
func TestCallers(t *testing.T) {
	tries := 0
	s, err := New(Config{Tokens: []Token{{Name: "look", Role: config.APIViewer, Secret: strong}}, Page: signedIn{},
		Allow: func(string) (bool, time.Duration) { tries++; return tries < 3, time.Minute }, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	m := http.NewServeMux()
	s.Routes(m)
	call := func(method, path, auth, cookie, site string) (int, string) {
		r := httptest.NewRequest(method, "http://127.0.0.1:9470"+path, strings.NewReader(`{"value":"yes"}`))
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		if cookie != "" {
			r.AddCookie(&http.Cookie{Name: "who", Value: cookie})
		}
		if site != "" {
			r.Header.Set("Sec-Fetch-Site", site)
		}
		w := httptest.NewRecorder()
		m.ServeHTTP(w, r)
		return w.Code, w.Body.String()
	}
	for _, c := range []struct {
		name, method, path, auth, cookie, site string
		status                                 int
		says                                   string
	}{
		{"no token", "GET", "/v1/sessions", "", "", "", http.StatusUnauthorized, `"code":"unauthorized"`},
		{"a viewer reads", "GET", "/v1/sessions", "Bearer " + strong, "", "", http.StatusOK, `"sessions":[]`},
		{"a viewer writes", "POST", "/v1/tasks", "Bearer " + strong, "", "", http.StatusForbidden, "look holds role viewer"},
		{"the page's person reads", "GET", "/v1/pending", "", "bo", "same-origin", http.StatusOK, `"pending":[]`},
		{"the page's person writes from elsewhere", "POST", "/v1/pending/r1/answer", "", "bo", "cross-site", http.StatusForbidden, "another site"},
		{"no such call", "GET", "/v1/nothing", "Bearer " + strong, "", "", http.StatusNotFound, `"code":"not_found"`},
		{"a wrong token", "GET", "/v1/sessions", "Bearer " + strings.Repeat("0", 32), "", "", http.StatusUnauthorized, "not a token of"},
		{"a wrong token again", "GET", "/v1/sessions", "Bearer nope", "", "", http.StatusUnauthorized, "not a token of"},
		{"a wrong token, throttled", "GET", "/v1/sessions", "Bearer nope", "", "", http.StatusTooManyRequests, `"code":"throttled"`},
	} {
		status, body := call(c.method, c.path, c.auth, c.cookie, c.site)
		if status != c.status || !strings.Contains(body, c.says) {
			t.Errorf("%s: %d %s; want %d and %q", c.name, status, body, c.status, c.says)
		}
	}
}
