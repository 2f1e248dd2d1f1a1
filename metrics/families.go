package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// families registers a node's metric families in r and lists them (Set.Families).
type families struct {
	r    *prometheus.Registry
	list []Family
}

func (f *families) note(name, typ, help string, labels []string) {
	f.list = append(f.list, Family{Name: namespace + "_" + name, Type: typ, Help: help, Labels: labels})
}

func (f *families) counter(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help}, labels)
	f.r.MustRegister(c)
	f.note(name, "counter", help, labels)
	return c
}

func (f *families) gauge(name, help string, labels ...string) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help}, labels)
	f.r.MustRegister(g)
	f.note(name, "gauge", help, labels)
	return g
}

// histogram has classic buckets and a native histogram.
func (f *families) histogram(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: name, Help: help, Buckets: buckets,
		NativeHistogramBucketFactor:     1.1,
		NativeHistogramMaxBucketNumber:  160,
		NativeHistogramMinResetDuration: time.Hour,
	}, labels)
	f.r.MustRegister(h)
	f.note(name, "histogram", help, labels)
	return h
}

// classic is a histogram with classic buckets only, for the per-line paths.
func (f *families) classic(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: name, Help: help, Buckets: buckets}, labels)
	f.r.MustRegister(h)
	f.note(name, "histogram", help, labels)
	return h
}

func (f *families) plain(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help})
	f.r.MustRegister(c)
	f.note(name, "counter", help, nil)
	return c
}
