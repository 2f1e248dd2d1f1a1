package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// nodes lists the fleet's nodes from their heartbeats.
func nodes(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("nodes", stdout, stderr)
	to := reachFlags(fs)
	out := newOutputFlags(fs)
	if _, err := parse(fs, args); err != nil {
		return usageError(stderr, err)
	}
	form, err := out.form()
	if err != nil {
		return usageError(stderr, err)
	}
	c, code := to.client("nodes", stderr)
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
	if form == outJSON {
		type row struct {
			*wire.NodeInfo
			State string `json:"state"`
		}
		rows := make([]row, 0, len(list))
		for _, n := range list {
			rows = append(rows, row{n, nodeState(n, now)})
		}
		return jsonLines(stdout, rows)
	}
	header := []string{"NODE", "STATE", "VERSION", "UPTIME", "HOSTS (busy/free)", "SUPERVISORS", "SESSIONS", "HEARTBEAT"}
	if form == outWide {
		header = []string{"NODE", "STATE", "VERSION", "STARTED", "UPTIME", "HOSTS (busy/idle/queued of pool)", "SUPERVISORS", "SESSIONS", "HEARTBEAT"}
	}
	rows := make([][]string, 0, len(list))
	for _, n := range list {
		hosts := make([]string, 0, len(n.Hosts))
		for _, h := range n.Hosts {
			if form == outWide {
				hosts = append(hosts, fmt.Sprintf("%s %d/%d/%d of %d", h.Name, h.Busy, h.Idle, h.Queued, h.Pool))
			} else {
				hosts = append(hosts, fmt.Sprintf("%s %d/%d", h.Name, h.Busy, h.Pool-h.Busy))
			}
		}
		uptime := n.Heartbeat.Sub(n.Started).Round(time.Second).String()
		row := []string{n.Name, nodeState(n, now), n.Version, uptime, dash(strings.Join(hosts, ", ")), dash(strings.Join(n.Supervisors, ",")),
			strconv.Itoa(n.Sessions), now.Sub(n.Stored).Round(100*time.Millisecond).String() + " ago"}
		if form == outWide {
			row = slices.Insert(row, 3, n.Started.UTC().Format(time.RFC3339))
		}
		rows = append(rows, row)
	}
	return table(stdout, header, rows)
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
