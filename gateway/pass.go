package gateway

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"sync"

	"github.com/agentmux/agentmux/config"
)

// A Pass lets one agent process reach one connection through the gateway: its token
// is in the process's environment, in place of the provider's key, and is good only
// while a session runs on the process (Bind) and until the process ends (Revoke).
type Pass struct {
	g     *Gateway
	token string
	sum   [sha256.Size]byte
	conn  *config.Connection
	// report is told of each call, whichever session made it, before the end of its
	// answer reaches the agent: it may wait (briefly) for the session to take it in.
	report func(Call)

	mu      sync.Mutex      // guards session, trace and held
	session string          // "": none runs, and calls are refused
	trace   context.Context // the session's span's, which its calls' spans join
	held    string          // why calls are held (the session's budget), or ""
}

// passes are the passes issued and not revoked, by the digest of their token.
type passes struct {
	mu sync.RWMutex // guards by
	by map[[sha256.Size]byte]*Pass
}

// Issue makes a pass to connection for an agent process; report is told of each call
// it makes, as the provider answered it, before the answer's end reaches the agent (a
// report that waits until its session took the call in lets a budget act before the
// next call). Revoke it when the process ends.
func (g *Gateway) Issue(connection string, report func(Call)) (*Pass, error) {
	c := g.cfg.Connections[connection]
	if c == nil {
		return nil, &UnknownConnectionError{Name: connection}
	}
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, err
	}
	p := &Pass{g: g, token: "amx-" + hex.EncodeToString(raw[:]), conn: c, report: report}
	p.sum = sha256.Sum256([]byte(p.token))
	g.passes.mu.Lock()
	g.passes.by[p.sum] = p
	g.passes.mu.Unlock()
	return p, nil
}

// Revoke ends p: a call with its token is refused from now on.
func (p *Pass) Revoke() {
	if p == nil {
		return
	}
	p.Bind("", nil)
	p.g.passes.mu.Lock()
	delete(p.g.passes.by, p.sum)
	p.g.passes.mu.Unlock()
}

// Bind says which session the process runs now: its calls are that session's, and
// their spans join trace's (nil: the session is not traced). "" says none runs, and
// its calls are refused until the next.
func (p *Pass) Bind(session string, trace context.Context) {
	if p == nil {
		return
	}
	if trace == nil {
		trace = context.Background()
	}
	p.mu.Lock()
	p.session, p.trace, p.held = session, trace, ""
	p.mu.Unlock()
}

// Hold refuses the process's calls, saying why (its session reached its budget),
// until Hold(""): the money is not spent first and counted after.
func (p *Pass) Hold(why string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.held = why
	p.mu.Unlock()
}

// state is the session the process runs now ("": none), its trace, and why its calls
// are held.
func (p *Pass) state() (session string, trace context.Context, held string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.session, p.trace, p.held
}

// Env is what the process's environment holds to reach its connection through the
// gateway: the provider's variables for its base URL and its key, both the gateway's
// (ANTHROPIC_BASE_URL and ANTHROPIC_AUTH_TOKEN, GOOGLE_GEMINI_BASE_URL and
// GEMINI_API_KEY, or OPENAI_BASE_URL and OPENAI_API_KEY). They come after the host's
// own, and take their place.
func (p *Pass) Env() []string {
	base := p.BaseURL()
	switch a, _ := apiOf(p.conn.Provider); a {
	case apiAnthropic:
		return []string{"ANTHROPIC_BASE_URL=" + base, "ANTHROPIC_AUTH_TOKEN=" + p.token, "ANTHROPIC_API_KEY=" + p.token}
	case apiGemini:
		return []string{"GOOGLE_GEMINI_BASE_URL=" + base, "GEMINI_API_KEY=" + p.token}
	}
	return []string{"OPENAI_BASE_URL=" + base, "OPENAI_API_KEY=" + p.token}
}

// BaseURL is the connection's base URL at the gateway: its provider's paths follow.
func (p *Pass) BaseURL() string { return p.g.URL() + "/" + p.conn.Name }

// Token is the pass's token: what the agent sends in place of a key.
func (p *Pass) Token() string { return p.token }

// find is the pass whose token is token, or nil.
func (g *Gateway) find(token string) *Pass {
	sum := sha256.Sum256([]byte(token))
	g.passes.mu.RLock()
	defer g.passes.mu.RUnlock()
	return g.passes.by[sum]
}
