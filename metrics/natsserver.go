package metrics

import "github.com/prometheus/client_golang/prometheus"

// ServerStats are the embedded NATS server's figures.
type ServerStats struct {
	Connections   int
	Subscriptions int
	InMsgs        int64
	OutMsgs       int64
	InBytes       int64
	OutBytes      int64
	SlowConsumers int64
	Memory        int64
}

// serverMetrics are the embedded server's families, each with its figure.
var serverMetrics = []struct {
	name, help string
	typ        prometheus.ValueType
	value      func(ServerStats) float64
}{
	{"connections", "Client connections to the embedded NATS server.", prometheus.GaugeValue, func(s ServerStats) float64 { return float64(s.Connections) }},
	{"subscriptions", "Subscriptions on the embedded NATS server.", prometheus.GaugeValue, func(s ServerStats) float64 { return float64(s.Subscriptions) }},
	{"in_messages_total", "Messages received by the embedded NATS server.", prometheus.CounterValue, func(s ServerStats) float64 { return float64(s.InMsgs) }},
	{"out_messages_total", "Messages sent by the embedded NATS server.", prometheus.CounterValue, func(s ServerStats) float64 { return float64(s.OutMsgs) }},
	{"in_bytes_total", "Bytes received by the embedded NATS server.", prometheus.CounterValue, func(s ServerStats) float64 { return float64(s.InBytes) }},
	{"out_bytes_total", "Bytes sent by the embedded NATS server.", prometheus.CounterValue, func(s ServerStats) float64 { return float64(s.OutBytes) }},
	{"slow_consumers_total", "Slow consumers the embedded NATS server cut off.", prometheus.CounterValue, func(s ServerStats) float64 { return float64(s.SlowConsumers) }},
	{"memory_bytes", "Resident memory the embedded NATS server reports (the whole process).", prometheus.GaugeValue, func(s ServerStats) float64 { return float64(s.Memory) }},
}

// ServerFamilies are the families WatchServer exports.
func ServerFamilies() []Family {
	out := make([]Family, len(serverMetrics))
	for i, m := range serverMetrics {
		typ := "gauge"
		if m.typ == prometheus.CounterValue {
			typ = "counter"
		}
		out[i] = Family{Name: namespace + "_nats_server_" + m.name, Type: typ, Help: m.help}
	}
	return out
}

// WatchServer exports the embedded NATS server's figures, read from stats at each
// scrape.
func (s *Set) WatchServer(stats func() ServerStats) {
	c := &serverCollector{stats: stats}
	for _, f := range ServerFamilies() {
		c.descs = append(c.descs, prometheus.NewDesc(f.Name, f.Help, nil, nil))
	}
	s.families = append(s.families, ServerFamilies()...)
	s.Registry.MustRegister(c)
}

type serverCollector struct {
	stats func() ServerStats
	descs []*prometheus.Desc // in the order of serverMetrics
}

func (c *serverCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *serverCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.stats()
	for i, m := range serverMetrics {
		ch <- prometheus.MustNewConstMetric(c.descs[i], m.typ, m.value(st))
	}
}
