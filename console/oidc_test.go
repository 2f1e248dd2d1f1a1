package console

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/agentmux/agentmux/config"
)

// TestOIDCCallbackRefusals: a callback the browser did not start here (no cookie,
// another state, a cookie of another console, a stale one) or that the provider
// refused signs no one in, and says why on the sign-in page. None reaches the provider.
func TestOIDCCallbackRefusals(t *testing.T) {
	cfg := &config.OIDC{Issuer: "http://127.0.0.1:9", ClientID: "agentmux", AllowedGroups: []string{"eng"}}
	key := derive("client secret", "agentmux console sign-in")
	s := offline(t, newGate("", "", key))
	s.oidc = newOIDCSignIn(cfg, "client secret", s.cfg.Log)
	soon := strconv.FormatInt(time.Now().Add(time.Minute).Unix(), 10)
	ours := s.gate.seal("st", "verifier", "nonce", soon)
	for _, c := range []struct {
		name, query, cookie, want string
	}{
		{"no cookie", "?state=st&code=c", "", "oidc-state"},
		{"another state", "?state=other&code=c", ours, "oidc-state"},
		{"another console's cookie", "?state=st&code=c", newGate("", "", derive("other", "agentmux console sign-in")).seal("st", "v", "n", soon), "oidc-state"},
		{"a stale cookie", "?state=st&code=c", s.gate.seal("st", "v", "n", strconv.FormatInt(time.Now().Add(-time.Second).Unix(), 10)), "oidc-state"},
		{"the provider refused", "?error=access_denied&state=st", ours, "oidc-denied"},
	} {
		r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:9470/oidc/callback"+c.query, nil)
		if c.cookie != "" {
			r.AddCookie(&http.Cookie{Name: oidcCookie, Value: c.cookie})
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if loc := w.Header().Get("Location"); w.Code != http.StatusSeeOther || loc != "/login?error="+c.want {
			t.Errorf("%s: %d to %q; want the sign-in page saying %s", c.name, w.Code, loc, c.want)
		}
		for _, set := range w.Result().Cookies() {
			if set.Name == cookieName {
				t.Errorf("%s: signed in", c.name)
			}
		}
	}
}
