package config

import (
	"net"
	"net/url"
	"strconv"
	"time"
)

// MaxReplicas is the most replicas JetStream keeps of a stream.
const MaxReplicas = 5

func (v *validator) nats(n *NATS) {
	at := func(key ...string) []string { return append([]string{"nats"}, key...) }
	if n.Replicas < 0 || n.Replicas > MaxReplicas {
		v.add(at("replicas"), "%d replicas; use 1 to %d, or leave it out: 1 on a lone server, 3 in a cluster", n.Replicas, MaxReplicas)
	}
	switch n.SyncInterval {
	case "":
	case "always":
		n.SyncAlways = true
	default:
		d, err := time.ParseDuration(n.SyncInterval)
		if err != nil || d <= 0 {
			v.add(at("sync_interval"), `%q is neither "always" nor a duration; use "always" (fsync every write) or e.g. "1s"`, n.SyncInterval)
		}
		n.SyncEvery = Duration(d)
	}
	c := n.Cluster
	if c == nil {
		return
	}
	if n.URL != "" {
		v.add(at("cluster"), "[nats.cluster] configures the embedded server, but url = %q connects to an external one; drop one of them", n.URL)
	}
	if !namePattern.MatchString(c.Name) {
		v.add(at("cluster", "name"), "a cluster needs a name of letters, digits, '_' and '-', the same on every server, e.g. name = \"agentmux\"")
	}
	if n.ServerName == "" {
		v.add(at("server_name"), "a server in a cluster needs a name of its own, e.g. server_name = \"n1\"")
	}
	if _, p, err := net.SplitHostPort(c.Listen); err != nil {
		v.add(at("cluster", "listen"), "%q: %v; use host:port for the other servers' routes, e.g. \"0.0.0.0:6222\"", c.Listen, err)
	} else if _, err := strconv.Atoi(p); err != nil {
		v.add(at("cluster", "listen"), "%q has no port number", c.Listen)
	}
	for i, r := range c.Routes {
		if u, err := url.Parse(r); err != nil || u.Scheme != "nats" || u.Port() == "" {
			v.add(at("cluster", "routes", strconv.Itoa(i)), "%q is not a route; use nats://host:port of another server's cluster listener", r)
		}
	}
}
