package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/agentmux/agentmux/internal/contexts"
)

// contextCommand keeps the user's named ways to reach a fleet: add, use, ls, show, rm.
func contextCommand(args []string, stdout, stderr io.Writer) int {
	verb := "ls"
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
		newFlags("context", stdout, stderr).Usage()
		return exitOK
	}
	if len(args) > 0 {
		verb, args = args[0], args[1:]
	}
	store, err := contexts.Open(os.Getenv)
	if err != nil {
		fmt.Fprintln(stderr, "agentmux context:", err)
		return exitError
	}
	switch verb {
	case "add":
		return contextAdd(store, args, stdout, stderr)
	case "use", "show", "rm":
		return contextNamed(store, verb, args, stdout, stderr)
	case "ls", "list":
		return contextList(store, args, stdout, stderr)
	}
	return usageError(stderr, fmt.Errorf("context %q: want add, use, ls, show or rm", verb))
}

func contextAdd(store contexts.Store, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("context add", stdout, stderr)
	var c contexts.Context
	fs.StringVar(&c.Server, "server", "", "the fleet's NATS `url` (nats://host:4222, tls://…; several separated by commas)")
	fs.StringVar(&c.Creds, "creds", "", "connect with this .creds `file`")
	fs.StringVar(&c.Nkey, "nkey", "", "connect with this nkey seed `file`")
	fs.StringVar(&c.As, "as", "", "with --nkey, the `name` the fleet knows that key by (its [[nats.users]] name)")
	fs.StringVar(&c.User, "user", "", "connect as this `user`")
	fs.StringVar(&c.PasswordEnv, "password-env", "", "the `variable` that holds --user's password when a command runs (never the password)")
	fs.StringVar(&c.TLSCA, "tls-ca", "", "trust the server's certificate signed by this CA `file`")
	use := fs.Bool("use", false, "make it the current context")
	pos, err := parse(fs, args)
	if err == nil && len(pos) != 1 {
		err = fmt.Errorf("want a name: agentmux context add NAME --server nats://…")
	}
	if err != nil {
		return usageError(stderr, err)
	}
	c.Name = pos[0]
	for _, file := range []*string{&c.Creds, &c.Nkey, &c.TLSCA} {
		if *file == "" {
			continue
		}
		if err := absolute(file); err != nil {
			return usageError(stderr, err)
		}
	}
	if err := c.Check(); err != nil {
		return usageError(stderr, fmt.Errorf("context %s: %w", c.Name, err))
	}
	f, err := store.Load()
	if err != nil {
		fmt.Fprintln(stderr, "agentmux context:", err)
		return exitError
	}
	_, replaced := f.Get(c.Name)
	f.Put(c)
	if *use || len(f.Contexts) == 1 {
		f.Current = c.Name
	}
	if err := store.Save(f); err != nil {
		fmt.Fprintln(stderr, "agentmux context:", err)
		return exitError
	}
	what := "added"
	if replaced {
		what = "replaced"
	}
	fmt.Fprintf(stdout, "context %s %s in %s", c.Name, what, store.Path)
	if f.Current == c.Name {
		fmt.Fprint(stdout, "; it is the current context")
	}
	fmt.Fprintln(stdout)
	return exitOK
}

// absolute makes a file a context names absolute, as the context is used from any
// directory, and checks that it can be read now.
func absolute(file *string) error {
	abs, err := filepath.Abs(*file)
	if err != nil {
		return err
	}
	if _, err := os.Stat(abs); err != nil {
		return fmt.Errorf("%s: %w", *file, err)
	}
	*file = abs
	return nil
}

func contextNamed(store contexts.Store, verb string, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("context "+verb, stdout, stderr)
	pos, err := parse(fs, args)
	if err != nil {
		return usageError(stderr, err)
	}
	f, err := store.Load()
	if err != nil {
		fmt.Fprintln(stderr, "agentmux context:", err)
		return exitError
	}
	name := ""
	switch {
	case len(pos) == 1:
		name = pos[0]
	case len(pos) == 0 && verb == "show":
		if name = os.Getenv(contexts.EnvContext); name == "" {
			name = f.Current
		}
		if name == "" {
			fmt.Fprintln(stderr, "agentmux context show: no current context: agentmux context use NAME")
			return exitError
		}
	default:
		return usageError(stderr, fmt.Errorf("want one name: agentmux context %s NAME", verb))
	}
	c, ok := f.Get(name)
	if !ok {
		fmt.Fprintf(stderr, "agentmux context %s: no context %q in %s (%s)\n", verb, name, store.Path, listOr(f.Names(), "it has none"))
		return exitError
	}
	switch verb {
	case "show":
		return jsonLines(stdout, []contextRow{row(c, f.Current)})
	case "use":
		f.Current = name
		fmt.Fprintf(stdout, "context %s is current: client commands reach %s\n", name, c.Server)
	case "rm":
		f.Remove(name)
		fmt.Fprintf(stdout, "context %s removed\n", name)
	}
	if err := store.Save(f); err != nil {
		fmt.Fprintln(stderr, "agentmux context:", err)
		return exitError
	}
	return exitOK
}

// contextRow is a context as ls and show print it.
type contextRow struct {
	Name     string `json:"name"`
	Current  bool   `json:"current"`
	Server   string `json:"server"`
	Identity string `json:"identity"` // how it connects: creds FILE, nkey FILE, user U ($VAR), or anonymous
	TLSCA    string `json:"tls_ca,omitempty"`
}

func row(c contexts.Context, current string) contextRow {
	r := contextRow{Name: c.Name, Current: c.Name == current, Server: c.Server, Identity: "anonymous", TLSCA: c.TLSCA}
	switch {
	case c.Creds != "":
		r.Identity = "creds " + c.Creds
	case c.Nkey != "" && c.As != "":
		r.Identity = "nkey " + c.Nkey + " as " + c.As
	case c.Nkey != "":
		r.Identity = "nkey " + c.Nkey
	case c.User != "":
		r.Identity = "user " + c.User + " ($" + c.PasswordEnv + ")"
	}
	return r
}

func contextList(store contexts.Store, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("context ls", stdout, stderr)
	out := newOutputFlags(fs)
	pos, err := parse(fs, args)
	if err == nil && len(pos) > 0 {
		err = fmt.Errorf("%q: agentmux context ls takes flags only", pos[0])
	}
	if err != nil {
		return usageError(stderr, err)
	}
	form, err := out.form()
	if err != nil {
		return usageError(stderr, err)
	}
	f, err := store.Load()
	if err != nil {
		fmt.Fprintln(stderr, "agentmux context:", err)
		return exitError
	}
	current := os.Getenv(contexts.EnvContext)
	if current == "" {
		current = f.Current
	}
	rows := make([]contextRow, 0, len(f.Contexts))
	for _, name := range f.Names() {
		c, _ := f.Get(name)
		rows = append(rows, row(c, current))
	}
	if form == outJSON {
		return jsonLines(stdout, rows)
	}
	if len(rows) == 0 {
		fmt.Fprintf(stderr, "no contexts in %s: agentmux context add NAME --server nats://…\n", store.Path)
		return exitOK
	}
	lines := make([][]string, 0, len(rows))
	for _, r := range rows {
		mark := ""
		if r.Current {
			mark = "*"
		}
		lines = append(lines, []string{mark, r.Name, r.Server, r.Identity})
	}
	return table(stdout, []string{"CURRENT", "NAME", "SERVER", "IDENTITY"}, lines)
}
