package console

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestHostAllowed: the console answers to loopback names, its own address and the names
// it was given, and to nothing else, whatever the Origin says.
func TestHostAllowed(t *testing.T) {
	s := &Server{cfg: Config{Addr: "10.0.0.5:9470", Hosts: []string{"console.example.com"}, Log: slog.New(slog.DiscardHandler)}}
	for host, want := range map[string]bool{
		"127.0.0.1:9470": true, "localhost:9470": true, "[::1]:9470": true, "127.0.0.2": true, "app.localhost:9470": true,
		"10.0.0.5:9470": true, "console.example.com": true, "CONSOLE.example.com.:443": true,
		"evil.example:9470": false, "10.0.0.6:9470": false, "": false, "console.example.com.evil.example": false,
	} {
		if got := s.hostAllowed(host); got != want {
			t.Errorf("hostAllowed(%q) = %v, want %v", host, got, want)
		}
	}
	any := &Server{cfg: Config{Addr: "0.0.0.0:9470"}}
	if any.hostAllowed("0.0.0.0:9470") || any.hostAllowed("192.168.1.9:9470") {
		t.Fatal("a console on every address answers to any address")
	}
}

// TestSignInThrottled: an address gets signInBurst tries at once, then waits; another
// address is not held up by it.
func TestSignInThrottled(t *testing.T) {
	th := newThrottle()
	now := time.Now()
	for i := range signInBurst {
		if ok, _ := th.allow("192.0.2.1:1000", now); !ok {
			t.Fatalf("try %d refused", i+1)
		}
	}
	ok, wait := th.allow("192.0.2.1:1001", now)
	if ok || wait <= 0 || wait > signInEvery {
		t.Fatalf("a try past the burst: allowed %v, wait %v", ok, wait)
	}
	if ok, _ := th.allow("192.0.2.2:1000", now); !ok {
		t.Fatal("another address was refused")
	}
	if ok, _ := th.allow("192.0.2.1:1000", now.Add(signInEvery)); !ok {
		t.Fatal("a try after the wait was refused")
	}
}

// TestServeHTTPRefusesOtherHosts: through the handler, a request for a name not its
// own is refused before anything else, even with a matching Origin.
func TestServeHTTPRefusesOtherHosts(t *testing.T) {
	s := offline(t, nil)
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		r := httptest.NewRequest(m, "http://evil.example:9470/api/stream", nil)
		r.Header.Set("Origin", "http://evil.example:9470")
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if w.Code != http.StatusMisdirectedRequest || !strings.Contains(w.Body.String(), "does not answer to") {
			t.Errorf("%s for evil.example: %d %s", m, w.Code, w.Body)
		}
	}
}
