package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/internal/contexts"
	"github.com/agentmux/agentmux/node"
)

// reach is how a client command reaches a fleet: the flags every client command
// shares, defined here once. In order, the first that applies:
//
//  1. -c FILE: the fleet's manifest, its [nats] and identity, as `up` reads them;
//  2. --server, $AGENTMUX_SERVER, --context, $AGENTMUX_CONTEXT or the current context
//     (agentmux context use), with --creds, --nkey or --user over the context's;
//  3. agentmux.toml in this directory;
//  4. this machine's node on 127.0.0.1:4222, as its local operator.
type reach struct {
	manifest string
	context  string
	id       contexts.Context // --server and the identity flags
}

func reachFlags(fs *flag.FlagSet) *reach {
	r := &reach{}
	fs.StringVar(&r.manifest, "c", "", "the fleet's manifest `file` (default ./"+defaultManifest+" when no context or server is named)")
	fs.StringVar(&r.context, "context", "", "reach the fleet through this `context` (agentmux context ls; default $"+contexts.EnvContext+", then the current one)")
	fs.StringVar(&r.id.Server, "server", "", "the fleet's NATS `url` (default $"+contexts.EnvServer+", then the context's)")
	fs.StringVar(&r.id.Creds, "creds", "", "connect with this .creds `file`")
	fs.StringVar(&r.id.Nkey, "nkey", "", "connect with this nkey seed `file`")
	fs.StringVar(&r.id.User, "user", "", "connect as this `user`, its password in --password-env")
	fs.StringVar(&r.id.PasswordEnv, "password-env", "", "the `variable` holding --user's password")
	fs.StringVar(&r.id.TLSCA, "tls-ca", "", "trust the server's certificate signed by this CA `file`")
	return r
}

const defaultManifest = "agentmux.toml"

// reached is a fleet reached: where its server is and who this client is to it.
type reached struct {
	m    *config.Manifest // the manifest, when reached through one
	url  string
	id   bus.Identity
	tls  *bus.TLS
	user string // the name the bus knows id by
	// local: connected as this machine's local operator, whose credential is at
	// localPath; it answers in the name --as gives, as on a bus without users.
	local     bool
	localPath string
	via       string // how it was reached, for messages: "agentmux.toml", "context prod", …
}

// resolve finds the fleet, reading the environment through getenv.
func (r *reach) resolve(getenv func(string) string) (*reached, error) {
	flags := r.context != "" || r.id.Server != "" || r.id.Creds != "" || r.id.Nkey != "" || r.id.User != "" || r.id.TLSCA != ""
	if r.manifest != "" {
		if flags {
			return nil, errors.New("-c reaches the fleet its manifest names: leave out --context, --server and the identity flags, or -c")
		}
		return manifestFleet(r.manifest, getenv)
	}
	c, via, err := r.chosen(getenv)
	if err != nil {
		return nil, err
	}
	if via != "" {
		return contextFleet(c, via, getenv)
	}
	if _, err := os.Stat(defaultManifest); err == nil {
		return manifestFleet(defaultManifest, getenv)
	}
	return localFleet(getenv)
}

// chosen is the context the flags, the environment and the contexts file name, the
// flags over it, and how it was named; via is "" when none of them names one.
func (r *reach) chosen(getenv func(string) string) (c contexts.Context, via string, err error) {
	name := r.context
	if name == "" {
		name = getenv(contexts.EnvContext)
	}
	store, err := contexts.Open(getenv)
	if err != nil {
		return c, "", err
	}
	file, err := store.Load()
	if err != nil {
		return c, "", err
	}
	if name == "" {
		name = file.Current
	}
	if name != "" {
		var ok bool
		if c, ok = file.Get(name); !ok {
			return c, "", fmt.Errorf("no context %q in %s (%s): agentmux context add %s --server nats://…", name, store.Path, listOr(file.Names(), "it has none"), name)
		}
		via = "context " + name
	}
	if server := cmp.Or(r.id.Server, getenv(contexts.EnvServer)); server != "" {
		if c.Name == "" {
			c.Name = "server" // no context's: a name Check takes
		}
		c.Server, via = server, "--server "+server
	}
	if r.id.Creds != "" || r.id.Nkey != "" || r.id.User != "" {
		c.Creds, c.Nkey, c.User, c.PasswordEnv, c.As = r.id.Creds, r.id.Nkey, r.id.User, r.id.PasswordEnv, ""
	}
	if r.id.TLSCA != "" {
		c.TLSCA = r.id.TLSCA
	}
	if via == "" && (r.id.Creds != "" || r.id.Nkey != "" || r.id.User != "" || r.id.TLSCA != "") {
		return c, "", fmt.Errorf("an identity without a server: give --server nats://… (or $%s), or --context", contexts.EnvServer)
	}
	return c, via, nil
}

func listOr(names []string, none string) string {
	if len(names) == 0 {
		return none
	}
	return "it has " + strings.Join(names, ", ")
}

// manifestFleet is the fleet of the manifest at path, as today.
func manifestFleet(path string, getenv func(string) string) (*reached, error) {
	m, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	return manifestsFleet(m, path, getenv)
}

// manifestsFleet is the fleet of manifest m, read from path.
func manifestsFleet(m *config.Manifest, path string, getenv func(string) string) (*reached, error) {
	id, err := node.Identity(m, getenv)
	if err != nil {
		return nil, err
	}
	f := &reached{m: m, url: clientURL(m), id: id, tls: node.TLS(m), via: path}
	if id.Anonymous() {
		if f.localPath, f.local = node.LocalCredentials(m, getenv); f.local {
			f.id.NkeySeedFile = f.localPath
			f.user = bus.LocalUser
			return f, nil
		}
	}
	if f.user, err = node.UserName(m, id); err != nil {
		return nil, err
	}
	return f, nil
}

// contextFleet is the fleet context c names, named by via.
func contextFleet(c contexts.Context, via string, getenv func(string) string) (*reached, error) {
	if err := c.Check(); err != nil {
		return nil, fmt.Errorf("%s: %w", via, err)
	}
	f := &reached{url: c.Server, id: bus.Identity{User: c.User, Credentials: c.Creds, NkeySeedFile: c.Nkey}, via: via}
	if c.TLSCA != "" {
		f.tls = &bus.TLS{CA: c.TLSCA}
	}
	if c.User != "" {
		if f.id.Password = getenv(c.PasswordEnv); f.id.Password == "" {
			return nil, fmt.Errorf("%s: user %s's password is in $%s, which is not set", f.via, c.User, c.PasswordEnv)
		}
	}
	if f.id.Anonymous() {
		return f, nil
	}
	if c.As != "" {
		f.user = c.As
		return f, nil
	}
	user, err := f.id.Name(nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.via, err)
	}
	f.user = user
	return f, nil
}

// localFleet is this machine's node, reached as its local operator.
func localFleet(getenv func(string) string) (*reached, error) {
	m := &config.Manifest{NATS: config.NATS{Listen: config.DefaultNATSListen}}
	f := &reached{m: nil, url: clientURL(m), via: "this machine's node"}
	if f.localPath, f.local = node.LocalCredentials(m, getenv); !f.local {
		where := "no node on this machine has written its operator's credential"
		if f.localPath != "" {
			where = "no node on this machine wrote " + f.localPath
		}
		return nil, fmt.Errorf("no fleet to reach: no %s in this directory, no context (agentmux context add NAME --server nats://…), no --server, and %s: start one (agentmux up), or name the fleet", defaultManifest, where)
	}
	f.id.NkeySeedFile, f.user = f.localPath, bus.LocalUser
	return f, nil
}

// client reaches the fleet for command cmd; on failure it has said why on stderr and
// returns the exit code.
func (r *reach) client(cmd string, stderr io.Writer, extra ...nats.Option) (*busClient, int) {
	f, err := r.resolve(os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "agentmux %s: %v\n", cmd, err)
		return nil, exitUsage // a bad manifest, context or flag
	}
	c, err := dialFleet(cmd, f, nil, extra...)
	if err != nil {
		fmt.Fprintf(stderr, "agentmux %s: %v\n", cmd, err)
		return nil, exitError
	}
	return c, exitOK
}
