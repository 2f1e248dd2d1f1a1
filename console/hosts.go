package console

import (
	"net"
	"slices"
	"strings"
)

// A page on another site can make the browser send requests to the console by pointing
// a name of its own at 127.0.0.1 (DNS rebinding): the browser then treats the console
// as that site, sends its Origin, and lets the page read the answers. The name stays in
// the Host header, so the console answers only requests for a name it knows is its own.

// hostAllowed reports whether a request for host (the Host header) is for this console:
// a loopback name, the address it listens on, or one of its public names.
func (s *Server) hostAllowed(host string) bool {
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	name = strings.ToLower(strings.TrimSuffix(strings.Trim(name, "[]"), "."))
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return true
	}
	if ip := net.ParseIP(name); ip != nil && (ip.IsLoopback() || s.listensOn(ip)) {
		return true
	}
	return slices.ContainsFunc(s.cfg.Hosts, func(h string) bool { return strings.EqualFold(h, name) })
}

// listensOn reports whether the console listens on ip itself (not on every address).
func (s *Server) listensOn(ip net.IP) bool {
	host, _, err := net.SplitHostPort(s.cfg.Addr)
	listen := net.ParseIP(host)
	return err == nil && listen != nil && !listen.IsUnspecified() && listen.Equal(ip)
}
