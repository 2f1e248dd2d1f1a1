package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// healthTimeout bounds the readiness check: a probe that hangs is a failed probe.
const healthTimeout = 5 * time.Second

// health asks a node on this machine whether it is ready (GET /readyz on its metrics
// address), for container health checks in images that have no curl or shell.
func health(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("health", stdout, stderr)
	path := fs.String("c", "agentmux.toml", "manifest `file`: its [metrics] addr is where the node listens")
	addr := fs.String("addr", "", "the node's metrics `address` (host:port), instead of the manifest's")
	if _, err := parse(fs, args); err != nil {
		return usageError(stderr, err)
	}
	if *addr == "" {
		m, code := loadManifest(*path, stderr)
		if m == nil {
			return code
		}
		*addr = m.Metrics.Addr
	}
	url, err := readyURL(*addr)
	if err != nil {
		fmt.Fprintln(stderr, "agentmux health:", err)
		return exitUsage
	}
	ctx, cancel := context.WithTimeout(context.Background(), healthTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		fmt.Fprintln(stderr, "agentmux health:", err)
		return exitUsage
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "agentmux health: no node answers on %s: %v\n", url, err)
		return exitError
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	text := strings.TrimSpace(string(body))
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "agentmux health: %s answered %s: %s\n", url, resp.Status, text)
		return exitError
	}
	fmt.Fprintln(stdout, text)
	return exitOK
}

// readyURL is the /readyz URL of a node listening on addr; an unspecified host (all
// interfaces) is reached on loopback.
func readyURL(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" || port == "0" {
		return "", fmt.Errorf("metrics address %q has no port to reach: set [metrics] addr or --addr", addr)
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/readyz", nil
}
