// Package config loads the agentmux manifest: a TOML file of hosts, supervisors, routes,
// tools, connections and the node's NATS and metrics settings.
//
// Load reads, decodes, fills defaults and validates in one step. Every problem is
// reported with the file, line and column it comes from and what to write instead, and
// all of them at once (ExampleParse shows one; ExampleRoutes_Match routes a request):
//
//	m, err := config.Load("agentmux.toml")
//	if err != nil {
//		fmt.Fprintln(os.Stderr, err) // config: hosts.worker.timeout (agentmux.toml:5:11): …
//		os.Exit(2)
//	}
//
// Concerto manifests load unchanged: [hosts.X] and [agents.X] are the same table,
// [connections.X] is read, and [project] and [mcp.X] are accepted and ignored. A Manifest
// is immutable after Load and safe to share between goroutines.
package config
