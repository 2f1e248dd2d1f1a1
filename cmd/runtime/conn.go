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
}

// clientURL is where CLI commands find the node's NATS.
func clientURL(m *config.Manifest) string {
	if m.NATS.URL != "" {
		return m.NATS.URL
	}
	return "nats://" + m.NATS.Listen
}

// dial connects command cmd with the manifest's client identity.
func dial(cmd string, m *config.Manifest, extra ...nats.Option) (*busClient, error) {
	return dialWith(cmd, m, nil, extra...)
}

// dialWith is dial that also tells refused of every refusal (a long-running command).
func dialWith(cmd string, m *config.Manifest, refused func(*bus.PermissionError), extra ...nats.Option) (*busClient, error) {
	id, err := node.Identity(m, os.Getenv)
	if err != nil {
		return nil, err
	}
	// No identity of its own: the local operator's, which a node on this machine
	// wrote for its CLI. It answers in the name --as gives, like a bus without users.
	localPath, local := "", false
	if id.Anonymous() {
		if localPath, local = node.LocalCredentials(m, os.Getenv); local {
			id.NkeySeedFile = localPath
		}
	}
	user := bus.LocalUser
	if !local {
		if user, err = node.UserName(m, id); err != nil {
			return nil, err
		}
	}
	c := &busClient{user: user, secured: !id.Anonymous() && !local}
	c.ctx, c.cancel = context.WithCancelCause(context.Background())
	c.nc, err = bus.Connect(bus.Client{URL: clientURL(m), Name: "agentmux-" + cmd, Identity: id, TLS: node.TLS(m), User: user,
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
		if id.Anonymous() && localPath != "" && errors.Is(err, nats.ErrAuthorization) {
			err = fmt.Errorf("%w; or run it as the user whose `agentmux up` wrote %s (no node on this machine did, or %s names another directory)",
				err, localPath, node.EnvStateDir)
		}
		c.cancel(err)
		return nil, err
	}
	if c.js, err = jetstream.New(c.nc); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// client loads the manifest at path and connects command cmd; on failure it has said
// why on stderr and returns the exit code.
func client(cmd, path string, stderr io.Writer) (*busClient, int) {
	_, c, code := manifestClient(cmd, path, stderr)
	return c, code
}

// manifestClient is client, with the manifest it was dialled from.
func manifestClient(cmd, path string, stderr io.Writer) (*config.Manifest, *busClient, int) {
	m, code := loadManifest(path, stderr)
	if m == nil {
		return nil, nil, code
	}
	c, err := dial(cmd, m)
	if err != nil {
		fmt.Fprintf(stderr, "agentmux %s: %v\n", cmd, err)
		return nil, nil, exitError
	}
	return m, c, exitOK
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
