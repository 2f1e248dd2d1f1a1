package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/agentmux/agentmux/metrics"
)

// Exit codes shared by run and submit.
const (
	exitOK    = 0
	exitError = 1 // the session ended with an error
	exitUsage = 2 // bad usage or bad manifest
)

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-version") {
		return version(args[1:], stdout, stderr)
	}
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		if len(args) > 1 { // help <command>: as <command> --help
			return dispatch([]string{args[1], "--help"}, stdout, stderr)
		}
		usage(stdout)
		return exitOK
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "agentmux: unknown command %q\n\n", args[0])
	usage(stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "agentmux: supervised agent sessions over NATS\n\nusage: agentmux <command> [flags]\n\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\n`agentmux <command> --help` (or `agentmux help <command>`) says more of each.")
}

// newFlags returns a FlagSet that reports errors on stderr instead of exiting. Its
// --help prints the command's synopsis and flags on stdout (usageError then exits 0);
// after a bad flag, the flag package's message and the usage go to stderr.
func newFlags(name string, stdout, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("agentmux "+name, flag.ContinueOnError)
	errs := &noting{w: stderr}
	fs.SetOutput(errs)
	fs.Usage = func() {
		out := stdout
		if errs.wrote { // a bad flag, said just now
			out = stderr
		}
		command, _, _ := strings.Cut(name, " ") // a subcommand's help is its command's
		for _, c := range commands() {
			if c.name == command {
				fmt.Fprintf(out, "usage: %s\n\n%s.\n", strings.TrimSpace("agentmux "+c.name+" "+c.synopsis), c.summary)
				if len(c.examples) > 0 {
					fmt.Fprintln(out, "\nexamples:")
					for _, e := range c.examples {
						fmt.Fprintln(out, "  "+e)
					}
				}
			}
		}
		if hasFlags(fs) {
			fmt.Fprintln(out, "\nflags:")
			fs.SetOutput(out)
			fs.PrintDefaults()
			fs.SetOutput(errs)
		}
		if fs.Lookup("context") != nil {
			fmt.Fprintln(out, "\n[fleet]: -c FILE, --context NAME or --server URL (with --creds, --nkey or --user); with none of them,\n$AGENTMUX_SERVER, $AGENTMUX_CONTEXT, the current context (agentmux context --help), ./agentmux.toml,\nor this machine's node on 127.0.0.1:4222, in that order.")
		}
	}
	return fs
}

// noting is a writer that notes whether anything was written to it.
type noting struct {
	w     io.Writer
	wrote bool
}

func (n *noting) Write(p []byte) (int, error) {
	n.wrote = true
	return n.w.Write(p)
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// said is an error the flag package has printed already, with the usage.
type said struct{ error }

func (s said) Unwrap() error { return s.error }

// parse parses flags wherever they stand among the positional arguments.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, said{err}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func newLogger(w io.Writer, level string) *slog.Logger {
	log, _ := newFormattedLogger(w, level, "text")
	return log
}

// logFormatFlag is the --log-format of the commands that run for long (up, console).
func logFormatFlag(fs *flag.FlagSet) *string {
	return fs.String("log-format", "text", "log `format`: text (key=value) or json (one object a line, for a log collector)")
}

// newFormattedLogger logs at level in format, text or json; another format is an error.
func newFormattedLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(level))); err != nil {
		l = slog.LevelWarn
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: use text or json", format)
}

// usageError reports a usage error (exit 2), or ends a --help (exit 0: the usage is on
// stdout already).
func usageError(stderr io.Writer, err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if !errors.As(err, new(said)) {
		fmt.Fprintln(stderr, "agentmux:", err)
	}
	return exitUsage
}

// version prints the build: `agentmux version` and `agentmux --version`.
func version(args []string, stdout, stderr io.Writer) int {
	if _, err := parse(newFlags("version", stdout, stderr), args); err != nil {
		return usageError(stderr, err)
	}
	fmt.Fprintln(stdout, "agentmux", metrics.ReadBuild())
	return exitOK
}
