package gateway

import (
	"strconv"
	"time"

	"github.com/agentmux/agentmux/config"
)

// finish counts a call that ended (or never reached its provider), and tells its
// pass's report, once.
func (g *Gateway) finish(c *call) {
	c.finished.Do(func() { g.settle(c) })
}

func (g *Gateway) settle(c *call) {
	out := Call{Session: c.session, Connection: c.conn.Name, Model: c.model, Status: c.status, RetryAfter: c.retryAfter, Took: time.Since(c.start)}
	if m := c.meter; m != nil {
		m.End()
		out.Usage, out.Measured, out.Lost, out.Finish = m.Usage(), m.counts != (counts{}), m.Lost(), m.Finish()
		if out.Usage.Model != "" {
			out.Model = out.Usage.Model
		}
	}
	out.Usage.Model = out.Model
	code := "error"
	if c.status != 0 {
		code = strconv.Itoa(c.status)
	}
	model := g.label(c.conn, out.Model)
	x := g.cfg.Metrics
	x.ModelRequests.WithLabelValues(c.conn.Name, model, code).Inc()
	x.ModelSeconds.WithLabelValues(c.conn.Name).Observe(out.Took.Seconds())
	if out.Measured {
		for _, k := range []struct {
			kind string
			n    int64
		}{{"input", out.Usage.Input}, {"output", out.Usage.Output}, {"cache_read", out.Usage.CacheRead}, {"cache_write", out.Usage.CacheWrite}} {
			if k.n > 0 {
				x.ModelTokens.WithLabelValues(c.conn.Name, model, k.kind).Add(float64(k.n))
			}
		}
	}
	if out.Lost {
		g.cfg.Log.Warn("a model call's answer was too large to read for its usage: its tokens are not counted", "connection", c.conn.Name, "session", c.session)
	}
	endSpan(c.span, out)
	if c.pass.report != nil {
		c.pass.report(out)
	}
}

// label is model as a metric's label: a model the connection or [pricing] names, or
// "other", so that an agent asking for made-up models cannot grow the series.
func (g *Gateway) label(c *config.Connection, model string) string {
	if model == "" {
		return "none"
	}
	if model == c.DefaultModel || g.cfg.Pricing[model] != nil {
		return model
	}
	for alias, id := range c.Models {
		if model == alias || model == id {
			return model
		}
	}
	return "other"
}
