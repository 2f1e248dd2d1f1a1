package node

import (
	"context"
	"reflect"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/gateway"
)

// startGateway serves the model gateway on loopback when a host of this node reaches
// its model through it (model = { connection = "…" }); its agents get their passes
// from it. It reads the connections' keys from the node's environment now.
func (n *Node) startGateway(opts Options) error {
	if !gatewayNeeded(n.conf.roles.hosts) {
		return nil
	}
	cfg := gateway.Config{Connections: opts.Manifest.Connections, Pricing: opts.Manifest.Pricing,
		Getenv: opts.Getenv, Tracer: n.tracer(), Metrics: n.Metrics, Log: n.log.With("component", "gateway")}
	if opts.Manifest.Gateway.Record == config.RecordFull {
		// Both bodies of a call fit one message of the server's (the exchange's JSON cuts
		// what its escapes add).
		cfg.KeepBodies = bus.BodyLimit(n.Bus.Conn) / 2
	}
	g, err := gateway.New(cfg)
	if err != nil {
		return err
	}
	if err := g.Start("127.0.0.1:0"); err != nil {
		return err
	}
	n.sessions.models = g
	n.log.Info("model gateway up", "url", g.URL())
	return nil
}

// stopGateway stops the gateway once the router (and every agent) has stopped.
func (n *Node) stopGateway(ctx context.Context) error {
	if n.sessions.models == nil {
		return nil
	}
	return n.sessions.models.Close(ctx)
}

func gatewayNeeded(hosts map[string]*config.Host) bool {
	for _, h := range hosts {
		if h.Model != nil {
			return true
		}
	}
	return false
}

// gatewayChanged reports whether m changes what the gateway serves: a host's model,
// a connection a host's model names, or what it records. The gateway reads them, and
// the keys, at start.
func gatewayChanged(old, m *config.Manifest) bool {
	view := func(m *config.Manifest) map[string]any {
		out := map[string]any{"record": m.Gateway.Record}
		for name, h := range m.Hosts {
			if h.Model != nil {
				out["hosts."+name] = *h.Model
				if c := m.Connections[h.Model.Connection]; c != nil {
					out["connections."+c.Name] = *c
				}
			}
		}
		return out
	}
	return !reflect.DeepEqual(view(old), view(m))
}
