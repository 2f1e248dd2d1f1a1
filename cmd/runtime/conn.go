package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/node"
	"github.com/agentmux/agentmux/wire"
)

const clientTimeout = 10 * time.Second

// busClient is a CLI command's connection to the node's NATS: who it is, and a
// context that ends the moment the server refuses it something, so a command says
// what was refused instead of waiting for a reply that cannot come.
type busClient struct {
	nc   *nats.Conn
	js   jetstream.JetStream
	user string // the name the bus knows this client by; empty when anonymous
	// secured: the client has an identity, so the bus (not the client) says who it is.
	secured bool
	ctx     context.Context
	cancel  context.CancelCauseFunc
	fleet   *reached // how it was reached
}

// clientURL is where CLI commands find the node's NATS.
func clientURL(m *config.Manifest) string {
	if m.NATS.URL != "" {
		return m.NATS.URL
	}
	return "nats://" + m.NATS.Listen
}

// dial connects command cmd to the fleet of manifest m, with its client identity.
func dial(cmd string, m *config.Manifest, extra ...nats.Option) (*busClient, error) {
	return dialWith(cmd, m, nil, extra...)
}

// dialWith is dial that also tells refused of every refusal (a long-running command).
func dialWith(cmd string, m *config.Manifest, refused func(*bus.PermissionError), extra ...nats.Option) (*busClient, error) {
	f, err := manifestsFleet(m, m.Path, os.Getenv)
	if err != nil {
		return nil, err
	}
	return dialFleet(cmd, f, refused, extra...)
}

// dialFleet connects command cmd to fleet f.
func dialFleet(cmd string, f *reached, refused func(*bus.PermissionError), extra ...nats.Option) (*busClient, error) {
	user := f.user
	c := &busClient{user: user, secured: !f.id.Anonymous() && !f.local, fleet: f}
	c.ctx, c.cancel = context.WithCancelCause(context.Background())
	var err error
	c.nc, err = bus.Connect(bus.Client{URL: f.url, Name: "agentmux-" + cmd, Identity: f.id, TLS: f.tls, User: user,
		OnRefusal: func(r *bus.PermissionError) {
			if refused != nil {
				refused(r)
			}
			// A request subscribes to the inbox before it publishes: a refused publish
			// says more than the refused inbox of an identity that may not ask at all.
			if !r.Publish && strings.HasPrefix(r.Subject, wire.InboxPrefix(user)+".") {
				return
			}
			c.cancel(r)
		}}, extra...)
	if err != nil {
		if f.id.Anonymous() && f.localPath != "" && errors.Is(err, nats.ErrAuthorization) {
			err = fmt.Errorf("%w; or run it as the user whose `agentmux up` wrote %s (no node on this machine did, or %s names another directory)",
				err, f.localPath, node.EnvStateDir)
		}
		c.cancel(err)
		return nil, fmt.Errorf("%s (reached through %s): %w", f.url, f.via, err)
	}
	if c.js, err = jetstream.New(c.nc); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// timeout is the command's context bounded by d.
func (c *busClient) timeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.ctx, d)
}

// explain returns the server's refusal when one ended the command, else err.
func (c *busClient) explain(err error) error {
	var refused *bus.PermissionError
	if cause := context.Cause(c.ctx); errors.As(cause, &refused) {
		return refused
	}
	if r := bus.Refusal(c.nc.LastError(), c.user); r != nil {
		return r
	}
	return err
}

// refused reports a refusal that already arrived: after a subscription, Flush makes
// sure the server's answer to it has been read.
func (c *busClient) refused() error {
	if err := c.nc.Flush(); err != nil {
		return err
	}
	return c.explain(nil)
}

func (c *busClient) close() {
	c.cancel(nil)
	c.nc.Close()
}

// follow prints the events on subject, or says that the bus refused to show them.
func (c *busClient) follow(subjects []string, w io.Writer) (*eventPrinter, error) {
	p, err := followEvents(c.nc, subjects, w)
	if err != nil {
		return nil, c.explain(err)
	}
	if err := c.refused(); err != nil {
		return nil, err
	}
	return p, nil
}
