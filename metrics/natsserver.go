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

// WatchServer exports the embedded NATS server's figures, read from stats at each
// scrape.
func (s *Set) WatchServer(stats func() ServerStats) {
	s.Registry.MustRegister(&serverCollector{stats: stats, d: serverDescs{
		conns:    prometheus.NewDesc(namespace+"_nats_server_connections", "Client connections to the embedded NATS server.", nil, nil),
		subs:     prometheus.NewDesc(namespace+"_nats_server_subscriptions", "Subscriptions on the embedded NATS server.", nil, nil),
		inMsgs:   prometheus.NewDesc(namespace+"_nats_server_in_messages_total", "Messages received by the embedded NATS server.", nil, nil),
		outMsgs:  prometheus.NewDesc(namespace+"_nats_server_out_messages_total", "Messages sent by the embedded NATS server.", nil, nil),
		inBytes:  prometheus.NewDesc(namespace+"_nats_server_in_bytes_total", "Bytes received by the embedded NATS server.", nil, nil),
		outBytes: prometheus.NewDesc(namespace+"_nats_server_out_bytes_total", "Bytes sent by the embedded NATS server.", nil, nil),
		slow:     prometheus.NewDesc(namespace+"_nats_server_slow_consumers_total", "Slow consumers the embedded NATS server cut off.", nil, nil),
		mem:      prometheus.NewDesc(namespace+"_nats_server_memory_bytes", "Resident memory the embedded NATS server reports (the whole process).", nil, nil),
	}})
}

type serverCollector struct {
	stats func() ServerStats
	d     serverDescs
}

type serverDescs struct {
	conns, subs, inMsgs, outMsgs, inBytes, outBytes, slow, mem *prometheus.Desc
}

func (c *serverCollector) Describe(ch chan<- *prometheus.Desc) {
	d := c.d
	for _, desc := range []*prometheus.Desc{d.conns, d.subs, d.inMsgs, d.outMsgs, d.inBytes, d.outBytes, d.slow, d.mem} {
		ch <- desc
	}
}

func (c *serverCollector) Collect(ch chan<- prometheus.Metric) {
	st, d := c.stats(), c.d
	ch <- prometheus.MustNewConstMetric(d.conns, prometheus.GaugeValue, float64(st.Connections))
	ch <- prometheus.MustNewConstMetric(d.subs, prometheus.GaugeValue, float64(st.Subscriptions))
	ch <- prometheus.MustNewConstMetric(d.inMsgs, prometheus.CounterValue, float64(st.InMsgs))
	ch <- prometheus.MustNewConstMetric(d.outMsgs, prometheus.CounterValue, float64(st.OutMsgs))
	ch <- prometheus.MustNewConstMetric(d.inBytes, prometheus.CounterValue, float64(st.InBytes))
	ch <- prometheus.MustNewConstMetric(d.outBytes, prometheus.CounterValue, float64(st.OutBytes))
	ch <- prometheus.MustNewConstMetric(d.slow, prometheus.CounterValue, float64(st.SlowConsumers))
	ch <- prometheus.MustNewConstMetric(d.mem, prometheus.GaugeValue, float64(st.Memory))
}
