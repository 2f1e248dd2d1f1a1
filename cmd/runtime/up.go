package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/agentmux/agentmux/internal/nodump"
	"github.com/agentmux/agentmux/node"
)

const (
	upStopTimeout     = 30 * time.Second
	defaultDrainGrace = 30 * time.Second
	reloadTimeout     = 30 * time.Second
)

func up(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("up", stdout, stderr)
	path := fs.String("c", "agentmux.toml", "manifest `file`")
	name := fs.String("name", node.HostName(), "node `name`: its entry in `agentmux nodes` and its store's folder; two live nodes may not share one")
	logLevel := fs.String("log", "info", "log `level`: debug, info, warn, error")
	logFormat := logFormatFlag(fs)
	noSup := fs.Bool("no-supervisors", false, "leave the manifest's supervisors to other nodes")
	noHosts := fs.Bool("no-hosts", false, "run no agents: leave every host to other nodes")
	hosts := fs.String("hosts", "", "run only these hosts (`a,b`); routes naming others are fine")
	sups := fs.String("supervisors", "", "serve only these supervisors (`x,y`)")
	grace := fs.Duration("grace", defaultDrainGrace, "on SIGTERM, how long running sessions may finish before their tasks go back to the queue")
	handover := fs.Bool("handover", true, "on SIGTERM, hand each running session that can be checkpointed to another node at its next checkpoint, not waiting out the grace")
	if _, err := parse(fs, args); err != nil {
		return usageError(stderr, err)
	}
	m, code := loadManifest(*path, stderr)
	if m == nil {
		return code
	}
	log, err := newFormattedLogger(stderr, *logLevel, *logFormat)
	if err != nil {
		return usageError(stderr, err)
	}
	guard(log)
	for _, w := range m.Warnings {
		log.Warn("manifest", "problem", w.Error())
	}
	state, err := node.StateDir(os.Getenv)
	if err != nil {
		fmt.Fprintln(stderr, "agentmux up:", err)
		return exitError
	}
	offset, err := clockOffset(os.Getenv, log)
	if err != nil {
		fmt.Fprintln(stderr, "agentmux up:", err)
		return exitError
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	// SIGHUP reloads the manifest (awaitStop); until the node is up it is held.
	hups := make(chan os.Signal, 1)
	signal.Notify(hups, syscall.SIGHUP)
	defer signal.Stop(hups)

	// A signal while the node starts (it may wait a minute for its cluster) ends the
	// start; one just after it is read from sigs below.
	starting, stopStarting := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	n, err := node.Start(starting, node.Options{Manifest: m, Name: *name, Log: log, StateDir: state,
		NoSupervisors: *noSup, Supervisors: list(*sups), NoHosts: *noHosts, Hosts: list(*hosts), ClockOffset: offset})
	signalled := starting.Err() != nil
	stopStarting()
	if err != nil && signalled {
		log.Info("stopped while starting", "err", err)
		return exitOK
	}
	if err != nil {
		fmt.Fprintln(stderr, "agentmux up:", err)
		return exitError
	}
	info := n.Info()
	store := "the external server's"
	if srv := n.Bus.Server(); srv != nil {
		store = srv.JetStreamConfig().StoreDir
	}
	log.Info("node up", "node", n.Name, "nats", n.Bus.ClientURL(), "store", store, "replicas", n.Replicas(), "metrics", n.MetricsAddr(),
		"hosts", strings.Join(n.Hosts(), ","), "supervisors", strings.Join(info.Supervisors, ","))
	if local := n.Bus.LocalOperator(); local != "" {
		log.Info("the CLI on this machine connects as the local operator; no anonymous client gets in", "credential", local)
	}
	sig := awaitStop(sigs, hups, n, log)
	log.Info("draining, then stopping; a second signal forces", "signal", sig.String(), "grace", *grace)
	ctx, cancel := context.WithTimeout(context.Background(), *grace+upStopTimeout)
	defer cancel()
	go func() {
		select {
		case <-sigs:
			fmt.Fprintln(stderr, "agentmux up: forced exit")
			os.Exit(exitError)
		case <-ctx.Done():
		}
	}()
	if err := n.Drain(ctx, *grace, *handover); err != nil {
		log.Warn("drain", "err", err)
	}
	if err := n.Stop(ctx); err != nil {
		fmt.Fprintln(stderr, "agentmux up:", err)
		return exitError
	}
	log.Info("node stopped")
	return exitOK
}

// awaitStop waits for a signal that stops the node. SIGHUP reloads the manifest in
// place: a manifest that does not load, or changes what needs a restart, is refused in
// the log and the one before runs on.
func awaitStop(sigs, hups <-chan os.Signal, n *node.Node, log *slog.Logger) os.Signal {
	for {
		select {
		case sig := <-sigs:
			return sig
		case <-hups:
			ctx, cancel := context.WithTimeout(context.Background(), reloadTimeout)
			if err := n.ReloadManifest(ctx); err != nil {
				log.Error("SIGHUP: manifest not reloaded", "err", err)
			}
			cancel()
		}
	}
}

// list splits a comma-separated flag value; empty gives nil.
func list(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// guard keeps the processes this one starts, and any other of its user, out of its
// environment and memory, where the bus's and the providers' secrets are.
func guard(log *slog.Logger) {
	if err := nodump.Apply(); err != nil {
		log.Warn("other processes of this user can read this one's environment and memory", "err", err)
	}
}

// clockOffsetEnv moves the node's wall clock, for tests of a fleet whose clocks disagree
// (node.Options.ClockOffset). It is not a setting: a node says so when it is set.
const clockOffsetEnv = "AGENTMUX_TEST_CLOCK_OFFSET"

func clockOffset(getenv func(string) string, log *slog.Logger) (time.Duration, error) {
	v := getenv(clockOffsetEnv)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s=%q: %w; it takes a duration such as 2m or -1m30s, for tests only", clockOffsetEnv, v, err)
	}
	log.Warn("this node's wall clock is moved, for a test", "offset", d, "variable", clockOffsetEnv)
	return d, nil
}
