package bench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/node"
)

// Roles of a fleet node process.
const (
	RoleAgents      = "agents"      // runs the hosts (in-process load agents), no supervisors
	RoleSupervisors = "supervisors" // runs the supervisors, no hosts
)

// RunNodeProcess is a fleet member for the scaling curve, in a process of its own: a
// node on the manifest's NATS, with the load agents in process, in one role. It says
// "ready" on stdout once it takes work, and stops on SIGTERM or SIGINT.
func RunNodeProcess(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("loadgen node", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("c", "", "manifest `file`")
	name := fs.String("name", "", "node `name`")
	role := fs.String("role", RoleAgents, "agents or supervisors")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	m, err := config.Load(*path)
	if err != nil {
		fmt.Fprintln(stderr, "loadgen node:", err)
		return 2
	}
	opts := node.Options{Manifest: m, Name: *name, Log: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})), MetricsAddr: "-"}
	switch *role {
	case RoleAgents:
		opts.NoSupervisors, opts.InProc = true, map[string]node.InProc{}
		for h := range m.Hosts {
			opts.InProc[h] = inprocAgent
		}
	case RoleSupervisors:
		opts.NoHosts = true
	default:
		fmt.Fprintf(stderr, "loadgen node: role %q: use %s or %s\n", *role, RoleAgents, RoleSupervisors)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	n, err := node.Start(ctx, opts)
	if err != nil {
		fmt.Fprintln(stderr, "loadgen node:", err)
		return 1
	}
	fmt.Fprintln(stdout, "ready")
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := n.Stop(stopCtx); err != nil {
		fmt.Fprintln(stderr, "loadgen node:", err)
		return 1
	}
	return 0
}
