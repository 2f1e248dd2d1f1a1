package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/internal/rawjson"
)

// call is one call under way.
type call struct {
	pass       *Pass
	session    string
	conn       *config.Connection
	model      string // asked for
	start      time.Time
	status     int
	retryAfter time.Duration
	meter      *meter
	bodies     *Bodies    // nil: not kept
	span       trace.Span // a no-op one without a tracer
	finished   sync.Once
}

type callKey struct{}

// ServeHTTP implements http.Handler: /<connection>/<the provider's path>, with the
// token of a pass to that connection.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	conn := g.cfg.Connections[name]
	var a api
	if conn != nil {
		a, _ = apiOf(conn.Provider)
	}
	point, pathModel := endpoint(r.Method, rest)
	p := g.find(tokenOf(r))
	switch {
	case p == nil:
		g.refuse(w, r, a, http.StatusUnauthorized, "token", "not a token this node's gateway issued, or one revoked with its process: an agent's token is in its environment")
		return
	case conn == nil || p.conn != conn:
		g.refuse(w, r, a, http.StatusForbidden, "connection", "this token is for connection "+p.conn.Name+", not "+strconv.Quote(name))
		return
	case !slices.Contains(a.endpoints(), point):
		g.refuse(w, r, a, http.StatusNotFound, "endpoint", "the gateway passes on the model API only: "+strings.Join(a.endpoints(), ", "))
		return
	}
	session, trace, held := p.state()
	switch {
	case session == "":
		g.refuse(w, r, a, http.StatusForbidden, "session", "no session runs on this agent now: its token is good only while one does")
		return
	case held != "":
		g.refuse(w, r, a, http.StatusForbidden, "held", held)
		return
	}
	body, model, err := g.readBody(r, a, rest)
	if err != nil {
		g.refuse(w, r, a, http.StatusBadRequest, "body", err.Error())
		return
	}
	release, waited, err := g.limits[name].wait(r.Context())
	g.cfg.Metrics.ModelLimitWait.WithLabelValues(name).Observe(waited.Seconds())
	if err != nil {
		return // the agent went while its call waited its turn
	}
	defer release()
	if pathModel != "" {
		model = pathModel
	}
	c := &call{pass: p, session: session, conn: conn, model: model, start: time.Now()}
	if g.cfg.KeepBodies > 0 {
		c.bodies = &Bodies{Method: r.Method, Path: "/" + rest, Request: body, RequestBytes: int64(len(body))}
	}
	c.span = g.startSpan(trace, c, a)
	r = r.WithContext(context.WithValue(r.Context(), callKey{}, c))
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	r.URL.Path, r.URL.RawPath = "/"+rest, ""
	g.proxies[name].ServeHTTP(w, r)
	g.finish(c)
}

// readBody reads a call's request, and the model it asks for. A streamed Chat
// Completions call is asked to end with its usage (stream_options.include_usage), which
// the provider otherwise leaves out of a stream.
func (g *Gateway) readBody(r *http.Request, a api, rest string) ([]byte, string, error) {
	if r.Method == http.MethodGet {
		return nil, "", nil
	}
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, g.cfg.MaxBody))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, "", errors.New("the request is larger than the gateway takes (" + strconv.FormatInt(g.cfg.MaxBody, 10) + " bytes)")
	case err != nil:
		return nil, "", errors.New("the request was not read: " + err.Error())
	}
	var q struct {
		Model         string          `json:"model"`
		Stream        bool            `json:"stream"`
		StreamOptions json.RawMessage `json:"stream_options"`
	}
	if !rawjson.Fields(body, func(key, value []byte) bool {
		switch string(key) {
		case "model":
			return json.Unmarshal(value, &q.Model) == nil
		case "stream":
			return json.Unmarshal(value, &q.Stream) == nil
		case "stream_options":
			q.StreamOptions = value
		}
		return true
	}) && json.Unmarshal(body, &q) != nil {
		return nil, "", errors.New("the request is not a JSON object of the model API")
	}
	if a == apiOpenAI && q.Stream && rest == "chat/completions" {
		body = withUsage(body, q.StreamOptions)
	}
	return body, q.Model, nil
}

// withUsage is a Chat Completions request whose stream ends with its usage.
func withUsage(body, options []byte) []byte {
	var top map[string]json.RawMessage
	var opts map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil || (len(options) > 0 && string(options) != "null" && json.Unmarshal(options, &opts) != nil) {
		return body
	}
	if opts == nil {
		opts = map[string]json.RawMessage{}
	}
	if string(opts["include_usage"]) == "true" {
		return body
	}
	opts["include_usage"] = json.RawMessage("true")
	top["stream_options"], _ = json.Marshal(opts)
	out, err := json.Marshal(top)
	if err != nil {
		return body
	}
	return out
}

// proxy passes calls to connection c on to upstream, with c's key in place of the
// agent's token, and meters the answers.
func (g *Gateway) proxy(c *config.Connection, a api, upstream *url.URL) *httputil.ReverseProxy {
	key := g.keys[c.Name]
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			if q := pr.Out.URL.Query(); q.Has("key") { // Gemini's key in the URL: the agent's token, too
				q.Del("key")
				pr.Out.URL.RawQuery = q.Encode()
			}
			pr.SetURL(upstream)
			h := pr.Out.Header
			for _, k := range []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key", "Cookie", "Proxy-Authorization", "Accept-Encoding"} {
				h.Del(k) // the agent's token stays here; the transport asks for (and undoes) compression itself, so the meter reads text
			}
			if key != "" {
				a.setKey(h, key)
			}
			if c.Organization != "" {
				h.Set("OpenAI-Organization", c.Organization)
			}
			if c.Project != "" {
				h.Set("OpenAI-Project", c.Project)
			}
		},
		Transport:     g.cfg.Transport,
		BufferPool:    &g.buffers,
		FlushInterval: -1, // each event as it comes
		ModifyResponse: func(resp *http.Response) error {
			cl := resp.Request.Context().Value(callKey{}).(*call)
			cl.status = resp.StatusCode
			cl.retryAfter = retryAfter(resp)
			cl.meter = &meter{stream: strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"), api: a}
			resp.Body = &meteredBody{ReadCloser: resp.Body, m: cl.meter, bodies: cl.bodies, keep: g.cfg.KeepBodies, end: func() { g.finish(cl) }}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			g.cfg.Log.Warn("a model call did not reach its provider", "connection", c.Name, "err", err)
			if r.Context().Err() != nil {
				return // the agent went
			}
			writeError(w, a, http.StatusBadGateway, "the gateway did not reach connection "+c.Name+": "+err.Error())
		},
	}
}

// retryAfter is the wait a provider asked for in a 429, 503 or 529: its retry-after
// header, in seconds or as a date.
func retryAfter(resp *http.Response) time.Duration {
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable, 529:
	default:
		return 0
	}
	v := resp.Header.Get("Retry-After")
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// meteredBody passes the provider's answer on, and shows each byte to the meter. At
// its end, before its last bytes go to the agent, the call is finished: its session
// knows what it spent before the agent can make its next call.
type meteredBody struct {
	io.ReadCloser
	m      *meter
	bodies *Bodies // nil: the answer is not kept
	keep   int
	end    func()
}

func (b *meteredBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.m.Write(p[:n])
	if b.bodies != nil {
		b.bodies.ResponseBytes += int64(n)
		// Past what is kept, a secret's length more: one cut in two is still redacted.
		b.bodies.Response = append(b.bodies.Response, p[:max(min(n, b.keep+redactMargin-len(b.bodies.Response)), 0)]...)
	}
	if err != nil {
		b.end()
	}
	return n, err
}

// buffers lend the proxies their copy buffers, one a call under way, instead of a new
// 32 KB each.
type buffers struct{ p sync.Pool }

const copyBuffer = 32 << 10

func (b *buffers) Get() []byte {
	if buf, ok := b.p.Get().(*[]byte); ok {
		return *buf
	}
	return make([]byte, copyBuffer)
}

func (b *buffers) Put(buf []byte) {
	if cap(buf) == copyBuffer {
		buf = buf[:copyBuffer]
		b.p.Put(&buf)
	}
}
