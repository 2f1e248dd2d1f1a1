package router

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// Intake is the JetStream consumers a router pulls queued work from: one per host it
// runs and one per pipeline it can run. The node makes them before it spawns the
// router, so that no actor waits on JetStream in Receive.
type Intake struct {
	Hosts     map[string]jetstream.Consumer
	Pipelines map[string]jetstream.Consumer
}

// NewIntake creates (or takes up again) the durable consumers of the hosts the router
// configured by cfg runs, and of the pipelines all of whose stages it runs when it keeps
// pipeline runs (cfg.Pipelines).
func NewIntake(ctx context.Context, js jetstream.JetStream, cfg Config) (*Intake, error) {
	in := &Intake{Hosts: map[string]jetstream.Consumer{}, Pipelines: map[string]jetstream.Consumer{}}
	consumer := func(c jetstream.ConsumerConfig) (cons jetstream.Consumer, err error) {
		err = store.Settled(ctx, func() error {
			cons, err = js.CreateOrUpdateConsumer(ctx, wire.TaskStream, c)
			return err
		})
		return cons, err
	}
	hosts := hostsOf(cfg)
	for name, h := range hosts {
		if h.Attached != nil {
			continue // its sessions start from hooks (package attach), never from tasks
		}
		cons, err := consumer(taskConsumer("host_"+name, name))
		if err != nil {
			return nil, fmt.Errorf("router: task consumer of host %q: %w; the node cannot take its queued tasks", name, err)
		}
		in.Hosts[name] = cons
	}
	if cfg.Pipelines == nil {
		return in, nil
	}
	for name := range runnable(cfg.Manifest, hosts) {
		cons, err := consumer(taskConsumer("pipeline_"+name, name))
		if err != nil {
			return nil, fmt.Errorf("router: task consumer of pipeline %q: %w; the node cannot take its queued runs", name, err)
		}
		in.Pipelines[name] = cons
	}
	return in, nil
}

// hostsOf is the hosts the router configured by cfg runs.
func hostsOf(cfg Config) map[string]*config.Host {
	if cfg.Hosts != nil {
		return cfg.Hosts
	}
	return cfg.Manifest.Hosts
}

// runnable is the manifest's pipelines all of whose stages run on hosts.
func runnable(m *config.Manifest, hosts map[string]*config.Host) map[string]*config.Pipeline {
	out := map[string]*config.Pipeline{}
	for name, p := range m.Pipelines {
		all := true
		for _, st := range p.Stages {
			if hosts[st.Host] == nil {
				all = false
			}
		}
		if all {
			out[name] = p
		}
	}
	return out
}
