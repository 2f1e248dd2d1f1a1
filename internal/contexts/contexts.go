package contexts

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// Environment variables that choose a context, a server, or where the file is.
const (
	EnvContext   = "AGENTMUX_CONTEXT"    // the context to use, over the current one
	EnvServer    = "AGENTMUX_SERVER"     // a server to use, over a context's
	EnvConfigDir = "AGENTMUX_CONFIG_DIR" // the directory of contexts.toml; default the user's configuration directory's agentmux
)

// Context is one named way to reach a fleet.
type Context struct {
	Name        string `toml:"-"`
	Server      string `toml:"server"`                 // nats://host:port, or tls://; several separated by commas
	Creds       string `toml:"creds,omitempty"`        // a .creds file (user JWT and nkey seed)
	Nkey        string `toml:"nkey,omitempty"`         // an nkey seed file
	User        string `toml:"user,omitempty"`         // a user, with PasswordEnv
	PasswordEnv string `toml:"password_env,omitempty"` // the variable holding User's password (never the password)
	// As is the name the bus knows an nkey by (its [[nats.users]] name): its replies come
	// on that name's inbox. Default: the key's public key.
	As    string `toml:"as,omitempty"`
	TLSCA string `toml:"tls_ca,omitempty"` // the CA that signs the server's certificate
}

// Check reports what is wrong with c, in words that say what to give instead; the
// caller names the context.
func (c Context) Check() error {
	if !validName(c.Name) {
		return fmt.Errorf("context name %q: use letters, digits, '.', '_' and '-'", c.Name)
	}
	if c.Server == "" {
		return errors.New("no server: give --server nats://host:4222")
	}
	for _, s := range strings.Split(c.Server, ",") {
		if err := CheckServer(s); err != nil {
			return err
		}
	}
	n := 0
	for _, set := range []bool{c.Creds != "", c.Nkey != "", c.User != ""} {
		if set {
			n++
		}
	}
	switch {
	case n > 1:
		return errors.New("give one of --creds, --nkey and --user")
	case c.User != "" && c.PasswordEnv == "":
		return fmt.Errorf("--user %s needs --password-env: the variable that holds its password (a context keeps no password)", c.User)
	case c.User == "" && c.PasswordEnv != "":
		return errors.New("--password-env without --user")
	case c.As != "" && c.Nkey == "":
		return errors.New("--as names an nkey's user: give it with --nkey")
	}
	return nil
}

// CheckServer reports whether s is a NATS URL a client can dial.
func CheckServer(s string) error {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || u.Host == "" {
		return fmt.Errorf("server %q: want a URL such as nats://host:4222", s)
	}
	switch u.Scheme {
	case "nats", "tls", "ws", "wss":
	default:
		return fmt.Errorf("server %q: scheme %q: use nats://, tls://, ws:// or wss://", s, u.Scheme)
	}
	if u.User != nil {
		return fmt.Errorf("server %q holds a user or password: give them with --user and --password-env, never in the URL", u.Redacted())
	}
	return nil
}

func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// File is the whole contexts file.
type File struct {
	Current  string              `toml:"current,omitempty"`
	Contexts map[string]*Context `toml:"contexts,omitempty"`
}

// Get is the context named name.
func (f *File) Get(name string) (Context, bool) {
	c, ok := f.Contexts[name]
	if !ok {
		return Context{}, false
	}
	out := *c
	out.Name = name
	return out, true
}

// Put adds c, or replaces the context of its name.
func (f *File) Put(c Context) {
	if f.Contexts == nil {
		f.Contexts = map[string]*Context{}
	}
	f.Contexts[c.Name] = &c
}

// Remove removes the context named name, and makes none current if it was.
func (f *File) Remove(name string) bool {
	if _, ok := f.Contexts[name]; !ok {
		return false
	}
	delete(f.Contexts, name)
	if f.Current == name {
		f.Current = ""
	}
	return true
}

// Names are the contexts' names, sorted.
func (f *File) Names() []string {
	names := make([]string, 0, len(f.Contexts))
	for name := range f.Contexts {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Store is where the contexts file is.
type Store struct {
	Path string
}

// Open is the store the environment names: $AGENTMUX_CONFIG_DIR/contexts.toml, else
// contexts.toml in the user's configuration directory's agentmux ($XDG_CONFIG_HOME or
// ~/.config on Linux, ~/Library/Application Support on macOS).
func Open(getenv func(string) string) (Store, error) {
	dir := getenv(EnvConfigDir)
	if dir == "" {
		base := getenv("XDG_CONFIG_HOME")
		if base == "" {
			var err error
			if base, err = os.UserConfigDir(); err != nil {
				return Store{}, fmt.Errorf("contexts: no configuration directory: set %s or HOME", EnvConfigDir)
			}
		}
		dir = filepath.Join(base, "agentmux")
	}
	return Store{Path: filepath.Join(dir, "contexts.toml")}, nil
}

// Load reads the file; a missing file is an empty one. A file others may read or write
// is refused: it says which server a user reaches and with which credentials.
func (s Store) Load() (*File, error) {
	f := &File{}
	info, err := os.Stat(s.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, fmt.Errorf("contexts: %w", err)
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("contexts: %s is mode %04o, which others may read or write: chmod 600 %s", s.Path, perm, s.Path)
	}
	data, err := os.ReadFile(s.Path)
	if err != nil {
		return nil, fmt.Errorf("contexts: %w", err)
	}
	md, err := toml.Decode(string(data), f)
	if err != nil {
		return nil, fmt.Errorf("contexts: %s: %w", s.Path, err)
	}
	if keys := md.Undecoded(); len(keys) > 0 {
		return nil, fmt.Errorf("contexts: %s: unknown key %s", s.Path, keys[0])
	}
	for _, name := range f.Names() {
		c, _ := f.Get(name)
		if err := c.Check(); err != nil {
			return nil, fmt.Errorf("contexts: %s: context %s: %w", s.Path, name, err)
		}
	}
	if f.Current != "" {
		if _, ok := f.Contexts[f.Current]; !ok {
			return nil, fmt.Errorf("contexts: %s: current context %q is not among its contexts (%s): agentmux context use <name>", s.Path, f.Current, strings.Join(f.Names(), ", "))
		}
	}
	return f, nil
}

// Save writes f, 0600, replacing the file whole.
func (s Store) Save(f *File) error {
	if err := os.MkdirAll(filepath.Dir(s.Path), 0o700); err != nil {
		return fmt.Errorf("contexts: %w", err)
	}
	var buf bytes.Buffer
	buf.WriteString("# agentmux contexts: agentmux context add|use|ls|show|rm\n")
	if err := toml.NewEncoder(&buf).Encode(f); err != nil {
		return fmt.Errorf("contexts: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.Path), ".contexts-*.toml")
	if err != nil {
		return fmt.Errorf("contexts: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename, there is nothing of that name
	err = tmp.Chmod(0o600)
	if err == nil {
		_, err = tmp.Write(buf.Bytes())
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), s.Path)
	}
	if err != nil {
		return fmt.Errorf("contexts: writing %s: %w", s.Path, err)
	}
	return nil
}
