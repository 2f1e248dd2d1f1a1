package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// nodes lists the fleet's nodes from their heartbeats.
func nodes(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("nodes", stdout, stderr)
	path := fs.String("c", "agentmux.toml", "manifest `file`")
	asJSON := fs.Bool("json", false, "print JSON")
	if _, err := parse(fs, args); err != nil {
		return usageError(stderr, err)
	}
	c, code := client("nodes", *path, stderr)
	if c == nil {
		return code
	}
	defer c.close()
	ctx, cancel := c.timeout(clientTimeout)
	defer cancel()
	nodes, err := store.OpenNodes(ctx, c.js)
	if err != nil {
		fmt.Fprintln(stderr, "agentmux nodes:", c.explain(err))
		return exitError
	}
	list, now, err := nodes.List(ctx) // now is the server's: a heartbeat's age is on its clock
	if err != nil {
		fmt.Fprintln(stderr, "agentmux nodes:", c.explain(err))
		return exitError
	}
	if *asJSON {
		type row struct {
			*wire.NodeInfo
			State string `json:"state"`
		}
		rows := make([]row, 0, len(list))
		for _, n := range list {
			rows = append(rows, row{n, nodeState(n, now)})
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rows); err != nil {
			fmt.Fprintln(stderr, "agentmux nodes:", err)
			return exitError
		}
		return exitOK
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NODE\tSTATE\tVERSION\tUPTIME\tHOSTS (busy/free)\tSUPERVISORS\tSESSIONS\tHEARTBEAT")
	for _, n := range list {
		hosts := make([]string, 0, len(n.Hosts))
		for _, h := range n.Hosts {
			hosts = append(hosts, fmt.Sprintf("%s %d/%d", h.Name, h.Busy, h.Pool-h.Busy))
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s ago\n", n.Name, nodeState(n, now), n.Version,
			n.Heartbeat.Sub(n.Started).Round(time.Second), dash(strings.Join(hosts, ", ")), dash(strings.Join(n.Supervisors, ",")),
			n.Sessions, now.Sub(n.Stored).Round(100*time.Millisecond))
	}
	if err := w.Flush(); err != nil {
		return exitError
	}
	return exitOK
}

func nodeState(n *wire.NodeInfo, now time.Time) string {
	switch {
	case n.Stopped:
		return "stopped"
	case !n.Alive(now):
		return "gone"
	case n.Draining:
		return "draining"
	}
	return "up"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
