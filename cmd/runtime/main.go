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

type command struct {
	name, summary string
	run           func(args []string, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{"demo", "run 200 scripted agents under supervision on an embedded node", demo},
		{"run", "run one session or a pipeline on an embedded node: run -c <manifest> <host> <prompt> | <pipeline> name=value…", run},
		{"up", "run a node until SIGINT/SIGTERM: up -c <manifest> [--no-hosts|--hosts a,b] [--no-supervisors|--supervisors x,y]", up},
		{"nodes", "list the fleet's nodes: nodes -c <manifest> [--json]", nodes},
		{"drain", "stop a node taking tasks, hand back the rest: drain -c <manifest> <node> [--grace 30s] [--wait]", drain},
		{"submit", "queue a task or a pipeline run: submit -c <manifest> <host> <prompt> | <pipeline> name=value… [--follow]", submit},
		{"watch", "print live events of all sessions: watch -c <manifest>", watch},
		{"pending", "list requests waiting for a person: pending -c <manifest> [--json]", pending},
		{"respond", "answer a waiting request: respond -c <manifest> <id> <answer> [--as name]", respond},
		{"audit", "print a session's trail: audit -c <manifest> <session> [--json]", audit},
		{"console", "serve the web console people answer from: console -c <manifest> [--addr 127.0.0.1:9470]", consoleCommand},
		{"validate", "check a manifest: validate -c <manifest>", validate},
		{"nats-auth", "print an external NATS server's users for the manifest: nats-auth -c <manifest> [--helm]", natsAuth},
		{"health", "exit 0 if the node on this machine is ready: health -c <manifest> [--addr host:port]", health},
		{"sim", "be the scripted agent (used by demo, tests and loadgen)", simCommand},
		{"version", "print this binary's version and the revision it was built from", version},
	}
}

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-version") {
		return version(args[1:], stdout, stderr)
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "runtime: unknown command %q\n\n", args[0])
	usage(stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "agentmux runtime: supervised agent sessions over NATS\n\nusage: runtime <command> [flags]\n\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
}

// newFlags returns a FlagSet that reports errors instead of exiting.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("runtime "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parse parses flags wherever they stand among the positional arguments.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
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
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(level))); err != nil {
		l = slog.LevelWarn
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}

func usageError(stderr io.Writer, err error) int {
	if !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(stderr, "runtime:", err)
	}
	return exitUsage
}

// version prints the build: `runtime version` and `runtime --version`.
func version(args []string, stdout, stderr io.Writer) int {
	if _, err := parse(newFlags("version", stderr), args); err != nil {
		return usageError(stderr, err)
	}
	fmt.Fprintln(stdout, "agentmux", metrics.ReadBuild())
	return exitOK
}
