package router

import (
	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/protocol"
)

// Route returns the route function of a manifest: the first [[routes]] entry whose type,
// host and pattern all fit, or nil.
func Route(routes []*config.Route) func(host string, m *protocol.Message) *config.Route {
	return func(host string, m *protocol.Message) *config.Route {
		for _, r := range routes {
			if r.Type != "" && r.Type != string(m.Type) {
				continue
			}
			if r.Host != "" && r.Host != host {
				continue
			}
			if r.Re != nil && !r.Re.MatchString(m.RequestText()) {
				continue
			}
			return r
		}
		return nil
	}
}
