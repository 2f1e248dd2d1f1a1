package bench

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/node"
	"github.com/agentmux/agentmux/wire"
)

// runFleet runs the scenario across a NATS cluster of c.Nodes servers inside this
// process, one embedded in each node: the agents on the first node, the supervisors on
// all the others, so every question crosses a cluster route to be answered.
func runFleet(ctx context.Context, c *Config, log *slog.Logger, progress Progress) (*System, error) {
	return runCluster(ctx, c, log, progress, c.Nodes, true, fmt.Sprintf("agentmux-%dnodes", c.Nodes))
}

// replicatedServers is the cluster --replicated runs on: the audit at three copies.
const replicatedServers = 3

// runReplicated runs the scenario as the single node does — agents and supervisors on
// one node — but on a cluster of three servers, so that the audit and every stream and
// bucket are kept at three replicas: what not losing an answer with a server costs.
func runReplicated(ctx context.Context, c *Config, log *slog.Logger, progress Progress) (*System, error) {
	return runCluster(ctx, c, log, progress, replicatedServers, false, "agentmux-r3")
}

// runCluster runs the scenario on a cluster of servers nodes in this process. The
// first runs the agents, and the supervisors too unless split; the others run the
// supervisors when split, and only their server when not.
func runCluster(ctx context.Context, c *Config, log *slog.Logger, progress Progress, servers int, split bool, name string) (*System, error) {
	dir, err := os.MkdirTemp("", "agentmux-loadgen-fleet-")
	if err != nil {
		return nil, fmt.Errorf("bench: fleet stores: %w", err)
	}
	defer os.RemoveAll(dir)
	ports, err := freePorts(servers)
	if err != nil {
		return nil, err
	}
	manifest := func(i int) (*config.Manifest, error) {
		var routes []string
		for j, p := range ports {
			if j != i {
				routes = append(routes, fmt.Sprintf("%q", fmt.Sprintf("nats://127.0.0.1:%d", p)))
			}
		}
		text := fmt.Sprintf("[nats]\nlisten = \"127.0.0.1:0\"\nstore_dir = %q\nserver_name = \"n%d\"\n[nats.cluster]\nname = \"loadgen\"\nlisten = \"127.0.0.1:%d\"\nroutes = [%s]\n",
			fmt.Sprintf("%s/n%d", dir, i), i, ports[i], strings.Join(routes, ", "))
		return config.Parse("loadgen-fleet.toml", []byte(text+c.manifest()))
	}
	// The servers form the cluster while the nodes declare their streams, so all of
	// them start at once; each returns once JetStream took its declarations.
	type started struct {
		i   int
		n   *node.Node
		err error
	}
	done := make(chan started, servers)
	for i := range servers {
		m, err := manifest(i)
		if err != nil {
			return nil, fmt.Errorf("bench: the fleet manifest: %w", err)
		}
		opts := node.Options{Manifest: m, Name: fmt.Sprintf("loadgen-sup%d", i), Log: log, NoTasks: true, MetricsAddr: "-", NoHosts: true, NoSupervisors: !split}
		if i == 0 {
			opts = c.agentOptions(m, log)
			opts.Ephemeral, opts.NoSupervisors, opts.Name = false, split, "loadgen-agents"
		}
		go func() {
			n, err := node.Start(ctx, opts)
			done <- started{i, n, err}
		}()
	}
	nodes := make([]*node.Node, servers)
	var firstErr error
	for range servers {
		s := <-done
		nodes[s.i] = s.n
		if s.err != nil && firstErr == nil {
			firstErr = fmt.Errorf("bench: fleet node %d: %w", s.i, s.err)
		}
	}
	stopAll := func() {
		// The agents' node first: its sessions end while the supervisors still answer.
		for _, n := range nodes {
			if n != nil {
				stopNodes(n)
			}
		}
	}
	if firstErr != nil {
		stopAll()
		return nil, firstErr
	}
	replicas, err := auditReplicas(ctx, nodes[0])
	if err != nil {
		stopAll()
		return nil, err
	}
	s, err := runOn(ctx, c, name, nodes[0], stopAll, progress)
	if s != nil {
		s.AuditReplicas = replicas
	}
	return s, err
}

// freePorts finds n free loopback ports for cluster listeners.
func freePorts(n int) ([]int, error) {
	var ports []int
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("bench: a cluster port: %w", err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// auditReplicas is how many copies of the audit stream n's cluster keeps.
func auditReplicas(ctx context.Context, n *node.Node) (int, error) {
	st, err := n.Bus.JS.Stream(ctx, wire.AuditStream)
	if err != nil {
		return 0, fmt.Errorf("bench: the audit stream: %w", err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("bench: the audit stream: %w", err)
	}
	return info.Config.Replicas, nil
}
