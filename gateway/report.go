package gateway

import (
	"bytes"
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
	if b := c.bodies; b != nil {
		out.Bodies = &Bodies{Method: b.Method, Path: b.Path, RequestBytes: b.RequestBytes, ResponseBytes: b.ResponseBytes}
		out.Bodies.Request, out.Bodies.RequestCut = g.redact(b.Request, c)
		out.Bodies.Response, out.Bodies.ResponseCut = g.redact(b.Response, c)
	}
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

// redactMargin is how far past what it keeps a body is read before its secrets are
// cut out: a key's length, at least.
const redactMargin = 512

// redact is a body kept for the audit, up to KeepBodies bytes, without the secrets the
// gateway knows of: the connection's key (an agent never had it, but a provider may
// echo what it was sent) and the pass's token; and whether it was cut. A copy: the
// request's bytes are the ones sent on.
func (g *Gateway) redact(body []byte, c *call) ([]byte, bool) {
	out := bytes.Clone(body[:min(len(body), g.cfg.KeepBodies+redactMargin)])
	for _, secret := range []string{g.keys[c.conn.Name], c.pass.token} {
		if len(secret) >= 8 {
			out = bytes.ReplaceAll(out, []byte(secret), []byte("[redacted]"))
		}
	}
	cut := len(body) > g.cfg.KeepBodies+redactMargin || len(out) > g.cfg.KeepBodies
	return out[:min(len(out), g.cfg.KeepBodies)], cut
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
