package notify

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentmux/agentmux/internal/proctest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, proctest.Leaks()...) }

// TestPrivateAddresses: every address a webhook could use to reach the node's own
// machine, its network or a cloud's metadata service is private; public ones are not.
func TestPrivateAddresses(t *testing.T) {
	for _, a := range []string{
		"127.0.0.1", "::1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "fe80::1",
		"0.0.0.0", "0.1.2.3", "100.64.0.1", "192.0.0.8", "198.18.0.1", "240.0.0.1", "255.255.255.255",
		"224.0.0.1", "ff02::1", "fc00::1", "::ffff:127.0.0.1", "::ffff:169.254.169.254", "64:ff9b::7f00:1",
		"2001:db8::1", "100::1",
	} {
		if !private(netip.MustParseAddr(a)) {
			t.Errorf("%s is not counted private: a webhook could reach it", a)
		}
	}
	for _, a := range []string{"1.1.1.1", "8.8.8.8", "2606:4700:4700::1111", "::ffff:1.1.1.1"} {
		if private(netip.MustParseAddr(a)) {
			t.Errorf("%s, a public address, is counted private", a)
		}
	}
}

// TestClientReachesNoPrivateAddressAndFollowsNoRedirect: the notifier's client refuses
// a loopback receiver unless allowed, saying how to allow it, and never follows a
// receiver's redirect.
func TestClientReachesNoPrivateAddressAndFollowsNoRedirect(t *testing.T) {
	hits := make(chan string, 4)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits <- r.URL.Path
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "/stolen", http.StatusTemporaryRedirect)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()

	guarded := NewClient(5*time.Second, false)
	defer guarded.CloseIdleConnections()
	_, err := guarded.Post(receiver.URL+"/hook", "application/json", strings.NewReader("{}"))
	if !errors.Is(err, ErrPrivateAddress) || !strings.Contains(err.Error(), "set allow_private = true") {
		t.Fatalf("a post to a loopback receiver: %v; want it refused as a private address, saying how to allow it", err)
	}
	if len(hits) != 0 {
		t.Fatalf("the loopback receiver was reached: %s", <-hits)
	}

	allowed := NewClient(5*time.Second, true)
	defer allowed.CloseIdleConnections()
	resp, err := allowed.Post(receiver.URL+"/hook", "application/json", strings.NewReader("{}"))
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("a post with allow_private: %v %v", resp, err)
	}
	resp.Body.Close()
	_, err = allowed.Post(receiver.URL+"/redirect", "application/json", strings.NewReader("{}"))
	if err == nil || !strings.Contains(err.Error(), "notifications follow no redirect") {
		t.Fatalf("a redirecting receiver: %v; want the redirect refused", err)
	}
	if got := []string{<-hits, <-hits}; got[0] != "/hook" || got[1] != "/redirect" || len(hits) != 0 {
		t.Fatalf("the receiver saw %v and %d more; want /hook then /redirect, never /stolen", got, len(hits))
	}
}
