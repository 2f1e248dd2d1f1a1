package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/internal/strength"
)

// Token is one bearer token of the API under /v1: its secret, the identity its writes
// are done and audited as, and its role (config.APIOperator, APIViewer or APIHook).
type Token struct {
	Name   string
	Role   string
	Secret string
}

// caller is who sent an API request.
type caller struct {
	name string
	role string
	// page: signed in to the console's page (its cookie), whose writes must come
	// from the page itself (CSRF).
	page bool
}

// tokens checks bearer tokens, in time independent of which one a secret is near.
type tokens struct {
	sums  [][sha256.Size]byte
	whose []Token
}

func newTokens(list []Token) (*tokens, error) {
	t := &tokens{}
	names := map[string]bool{}
	for _, tok := range list {
		if err := strength.Check("the API token "+tok.Name, tok.Secret); err != nil {
			return nil, fmt.Errorf("api: %w", err)
		}
		if names[tok.Name] {
			return nil, fmt.Errorf("api: two API tokens are named %s; each names one identity", tok.Name)
		}
		names[tok.Name] = true
		t.sums = append(t.sums, sha256.Sum256([]byte(tok.Secret)))
		t.whose = append(t.whose, tok)
	}
	return t, nil
}

// match is the token whose secret is secret, or nil.
func (t *tokens) match(secret string) *Token {
	sum := sha256.Sum256([]byte(secret))
	var found *Token
	for i := range t.sums {
		if subtle.ConstantTimeCompare(sum[:], t.sums[i][:]) == 1 {
			found = &t.whose[i]
		}
	}
	return found
}

// apiError is how the API says what went wrong.
type apiError struct {
	Code  string `json:"code"`
	Error string `json:"error"`
}

func apiErrorf(w http.ResponseWriter, status int, code, format string, args ...any) {
	writeJSON(w, status, &apiError{Code: code, Error: fmt.Sprintf(format, args...)})
}

// who is the caller of an API request: a bearer token, or a person signed in to the
// console's page (as an operator).
func (s *Server) who(w http.ResponseWriter, r *http.Request) (*caller, bool) {
	auth := r.Header.Get("Authorization")
	if auth == "" {
		if name, role, ok := s.cfg.Page.Person(r); ok {
			return &caller{name: name, role: role, page: true}, true
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="agentmux"`)
		apiErrorf(w, http.StatusUnauthorized, "unauthorized", "send Authorization: Bearer <token>, a token of [[api.tokens]]")
		return nil, false
	}
	secret, ok := strings.CutPrefix(auth, "Bearer ")
	var tok *Token
	if ok {
		tok = s.tokens.match(strings.TrimSpace(secret))
	}
	if tok == nil {
		// A token carries 128 bits, so guessing is hopeless; wrong ones are logged, and
		// an address that keeps sending them is told to slow down. A right token is
		// never held up: on loopback every process shares one address.
		s.cfg.Log.Warn("API request with a wrong token refused", "remote", r.RemoteAddr, "path", r.URL.Path)
		if ok, wait := s.cfg.Allow(r.RemoteAddr); !ok {
			w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
			apiErrorf(w, http.StatusTooManyRequests, "throttled", "too many wrong tokens from this address; try again in %v", wait.Round(time.Second))
			return nil, false
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="agentmux", error="invalid_token"`)
		apiErrorf(w, http.StatusUnauthorized, "unauthorized", "that is not a token of this console's [[api.tokens]]")
		return nil, false
	}
	return &caller{name: tok.Name, role: tok.Role}, true
}

// roles lists who may call an endpoint.
type roles []string

var (
	readers = roles{config.APIOperator, config.APIViewer}
	writers = roles{config.APIOperator}
	hooks   = roles{config.APIOperator, config.APIHook}
)

// api wraps an endpoint: its caller must hold one of allowed, and a person signed in
// to the page may write only from the page itself.
func (s *Server) api(allowed roles, h func(http.ResponseWriter, *http.Request, *caller)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, ok := s.who(w, r)
		if !ok {
			return
		}
		if !slices.Contains(allowed, c.role) {
			apiErrorf(w, http.StatusForbidden, "forbidden", "%s holds role %s, and this takes %s", c.name, c.role, strings.Join(allowed, " or "))
			return
		}
		if c.page {
			if err := s.csrf.Check(r); err != nil {
				apiErrorf(w, http.StatusForbidden, "forbidden", "a request from another site")
				return
			}
		}
		h(w, r, c)
	}
}
