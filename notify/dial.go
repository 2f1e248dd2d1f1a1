package notify

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// A webhook's URL is the manifest's, but where it leads is the DNS's and the receiver's:
// a name that resolves to 127.0.0.1 or 169.254.169.254, or a receiver that redirects
// there, would make the node post agents' text to its own bus, console or metrics, or
// to a cloud's metadata service. So a notifier follows no redirect and connects only to
// public addresses, checked at connect time (after resolution, so a name rebound
// between a check and the connect is caught too), unless [notify.X] allow_private.

// ErrPrivateAddress is a webhook connection refused because of where it leads.
var ErrPrivateAddress = errors.New("a private address")

// privateRanges are the addresses a webhook may not reach without allow_private,
// besides the loopback, link-local, private, multicast and unspecified ones net/netip
// knows: shared address space (CGNAT), the IPv4 "this network", benchmarking, IETF
// protocol assignments, and IPv6 discard, NAT64 and documentation prefixes.
var privateRanges = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("100::/64"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("2001:db8::/32"),
}

// private reports whether a webhook must not reach addr without allow_private.
func private(addr netip.Addr) bool {
	addr = addr.Unmap()
	if addr.IsLoopback() || addr.IsPrivate() || addr.IsLinkLocalUnicast() || addr.IsLinkLocalMulticast() ||
		addr.IsInterfaceLocalMulticast() || addr.IsMulticast() || addr.IsUnspecified() || !addr.IsValid() {
		return true
	}
	for _, p := range privateRanges {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// newClient is a notifier's HTTP client: no redirects, no private addresses unless
// allowPrivate, each attempt bounded by timeout.
func NewClient(timeout time.Duration, allowPrivate bool) *http.Client {
	dialer := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		dialer.Control = func(_, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return err
			}
			addr, err := netip.ParseAddr(host)
			if err != nil {
				return fmt.Errorf("webhook address %q: %w", host, err)
			}
			if private(addr) {
				return fmt.Errorf("%w: the webhook leads to %s, %w; set allow_private = true in its [notify] to send there", errPermanent, addr, ErrPrivateAddress)
			}
			return nil
		}
	}
	transport := &http.Transport{
		// No proxy: a proxy would connect on the notifier's behalf, unchecked.
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   timeout,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{
		Timeout:   timeout,
		Transport: transport,
		CheckRedirect: func(req *http.Request, _ []*http.Request) error {
			return fmt.Errorf("%w: the webhook redirected to %s; notifications follow no redirect: give the final URL", errPermanent, req.URL.Redacted())
		},
	}
}
