package router

import (
	"reflect"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/agentmux/agentmux/actors/agent"
	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/internal/sandbox"
	"github.com/agentmux/agentmux/workspace"
)

// Reload gives the router a reloaded manifest. The node has checked that it changes
// nothing the router cannot take in place: the same hosts, each with the same pool.
//
// A host whose table changed runs its next sessions on processes started from the new
// table: its idle processes are stopped now, its busy ones when their session ends.
// Every live agent routes its next request by the new routes, in a running session too.
type Reload struct {
	Manifest   *config.Manifest
	Hosts      map[string]*config.Host // nil: every host of the manifest
	Sandboxes  sandbox.Set
	Workspaces map[string]*workspace.Provider
	Radar      *workspace.Radar
}

func (r *Router) reload(m *Reload) {
	r.cfg.Manifest, r.cfg.Hosts, r.cfg.Sandboxes, r.cfg.Workspaces, r.cfg.Radar = m.Manifest, m.Hosts, m.Sandboxes, m.Workspaces, m.Radar
	hosts := hostsOf(r.cfg)
	changed := &agent.RoutesChanged{Routes: m.Manifest.Routes, Promoted: r.cfg.Promoted}
	for name, p := range r.pools {
		h := hosts[name]
		if h == nil {
			continue // refused by the node; the pool runs on as it was
		}
		if !reflect.DeepEqual(p.host, h) {
			for _, pid := range p.retire() {
				r.c.Send(pid, &agent.Shutdown{Reason: "the manifest changed: host " + name + "'s next sessions start a new process"})
			}
			r.cfg.Log.Info("manifest reloaded: host changed; its next sessions run on new processes", "host", name, "busy", len(p.busy))
		}
		p.host = h
		for _, pid := range p.procs {
			r.c.Send(pid, changed)
		}
		r.dispatch(p)
	}
}

// retire takes the pool's processes out of use: the idle ones it returns, to be stopped
// now; the busy ones it marks, so they stop when their session ends (sessionEnded).
func (p *pool) retire() []*actor.PID {
	idle := p.idle
	p.idle = nil
	for id := range p.busy {
		p.stale[id] = true
	}
	return idle
}

// Promotions gives the router the shadows promoted fleet-wide (wire.PromotionsBucket)
// as they change: every live agent routes its next request by them (config.Route.Effective),
// in a running session too, and so does every agent started later.
type Promotions struct {
	Promoted map[string]bool // read only from now on: shared by every agent
}

func (r *Router) promote(m *Promotions) {
	r.cfg.Promoted = m.Promoted
	changed := &agent.RoutesChanged{Routes: r.cfg.Manifest.Routes, Promoted: m.Promoted}
	for _, p := range r.pools {
		for _, pid := range p.procs {
			r.c.Send(pid, changed)
		}
	}
}
