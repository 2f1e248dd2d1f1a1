package console

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/wire"
)

// Bounds of a sign-in with the identity provider.
const (
	oidcCookie     = "agentmux_oidc"
	oidcSignInTime = 10 * time.Minute // from /oidc/start to the callback
	oidcTimeout    = 10 * time.Second // each call to the provider
)

// oidcSignIn signs people in with the team's identity provider: OpenID Connect's
// authorization code flow with PKCE (RFC 7636), a nonce in the ID token, and the
// state in a signed cookie of the browser that started it.
type oidcSignIn struct {
	cfg    *config.OIDC
	secret string
	client *http.Client
	log    *slog.Logger

	mu       sync.Mutex
	provider *oidc.Provider // once discovered
}

func newOIDCSignIn(cfg *config.OIDC, secret string, log *slog.Logger) *oidcSignIn {
	return &oidcSignIn{cfg: cfg, secret: secret, client: &http.Client{Timeout: oidcTimeout}, log: log}
}

// host names the provider on the sign-in page.
func (o *oidcSignIn) host() string {
	if u, err := url.Parse(o.cfg.Issuer); err == nil {
		return u.Host
	}
	return o.cfg.Issuer
}

// discover reads the provider's discovery document, once it can.
func (o *oidcSignIn) discover() (*oidc.Provider, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.provider != nil {
		return o.provider, nil
	}
	// The provider keeps this context to fetch its keys as they rotate.
	p, err := oidc.NewProvider(oidc.ClientContext(context.Background(), o.client), o.cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("the identity provider at %s cannot be reached or is not one: %w", o.cfg.Issuer, err)
	}
	o.provider = p
	return p, nil
}

// oauth2 is the client configuration for a sign-in that came to r.
func (o *oidcSignIn) oauth2(p *oidc.Provider, r *http.Request) *oauth2.Config {
	redirect := o.cfg.RedirectURL
	if redirect == "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		redirect = scheme + "://" + r.Host + "/oidc/callback" // a host ServeHTTP allowed
	}
	return &oauth2.Config{ClientID: o.cfg.ClientID, ClientSecret: o.secret, Endpoint: p.Endpoint(), RedirectURL: redirect,
		Scopes: append([]string{oidc.ScopeOpenID}, o.cfg.Scopes...)}
}

func random() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// oidcStart sends the browser to the provider, holding what the callback checks in a
// cookie of its own: the state, PKCE's verifier and the nonce.
func (s *Server) oidcStart(w http.ResponseWriter, r *http.Request) {
	if s.oidc == nil {
		errorf(w, http.StatusNotFound, "this console signs in with its token: /login")
		return
	}
	p, err := s.oidc.discover()
	if err != nil {
		s.cfg.Log.Warn("console sign-in: identity provider", "err", err)
		errorf(w, http.StatusBadGateway, "%v; try again once it is up", err)
		return
	}
	state, verifier, nonce := random(), oauth2.GenerateVerifier(), random()
	until := time.Now().Add(oidcSignInTime)
	// Lax, not Strict: the provider's redirect back is a navigation from its site.
	http.SetCookie(w, &http.Cookie{Name: oidcCookie, Value: s.gate.seal(state, verifier, nonce, strconv.FormatInt(until.Unix(), 10)),
		Path: "/oidc/", Expires: until, HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, s.oidc.oauth2(p, r).AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oidc.Nonce(nonce)), http.StatusSeeOther)
}

// oidcCallback takes the provider's answer: it checks the state, trades the code
// (with PKCE's verifier) for tokens, verifies the ID token and its nonce, reads who
// it names and their groups, and signs them in with their role.
func (s *Server) oidcCallback(w http.ResponseWriter, r *http.Request) {
	if s.oidc == nil {
		errorf(w, http.StatusNotFound, "this console signs in with its token: /login")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: oidcCookie, Path: "/oidc/", MaxAge: -1, HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteLaxMode})
	refuse := func(code string, args ...any) {
		s.cfg.Log.Warn("console sign-in with the identity provider refused", append([]any{"why", signInProblems[code], "remote", r.RemoteAddr}, args...)...)
		http.Redirect(w, r, "/login?error="+code, http.StatusSeeOther)
	}
	c, err := r.Cookie(oidcCookie)
	var started []string
	if err == nil {
		started = s.gate.open(c.Value, 4)
	}
	switch q := r.URL.Query(); {
	case q.Get("error") != "":
		refuse("oidc-denied", "error", q.Get("error"), "description", q.Get("error_description"))
		return
	case started == nil || q.Get("state") != started[0]:
		refuse("oidc-state")
		return
	}
	p, err := s.oidc.discover()
	if err != nil {
		refuse("oidc-failed", "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(oidc.ClientContext(r.Context(), s.oidc.client), oidcTimeout)
	defer cancel()
	tok, err := s.oidc.oauth2(p, r).Exchange(ctx, r.URL.Query().Get("code"), oauth2.VerifierOption(started[1]))
	if err != nil {
		refuse("oidc-failed", "err", fmt.Errorf("trade the code for tokens: %w", err))
		return
	}
	who, err := s.oidc.identify(ctx, p, tok, started[2])
	if err != nil {
		refuse("oidc-failed", "err", err)
		return
	}
	switch {
	case !wire.IsPerson(who.name):
		refuse("oidc-name", "name", who.name, "claim", s.oidc.cfg.NameClaim)
		return
	case who.role == "":
		refuse("oidc-groups", "name", who.name, "groups", who.groups)
		return
	}
	s.cfg.Log.Info("console sign-in", "name", who.name, "role", who.role, "via", s.oidc.cfg.Issuer)
	http.SetCookie(w, s.gate.cookie(r, person{name: who.name, role: who.role}, time.Now().Add(signedIn)))
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// identity is whom the provider vouched for.
type identity struct {
	name   string
	groups []string
	role   string // "": none of their groups may sign in
}

// identify verifies tok's ID token (signature, issuer, audience, expiry, nonce) and
// reads the name and groups from it, or from the user info endpoint when the ID
// token leaves them out.
func (o *oidcSignIn) identify(ctx context.Context, p *oidc.Provider, tok *oauth2.Token, nonce string) (*identity, error) {
	raw, ok := tok.Extra("id_token").(string)
	if !ok {
		return nil, fmt.Errorf("the provider gave no ID token: is the openid scope allowed for client %s?", o.cfg.ClientID)
	}
	idt, err := p.Verifier(&oidc.Config{ClientID: o.cfg.ClientID}).Verify(ctx, raw)
	if err != nil {
		return nil, fmt.Errorf("the ID token: %w", err)
	}
	if idt.Nonce != nonce {
		return nil, fmt.Errorf("the ID token's nonce is not this sign-in's (replayed?)")
	}
	claims := map[string]any{}
	if err := idt.Claims(&claims); err != nil {
		return nil, fmt.Errorf("the ID token's claims: %w", err)
	}
	if claims[o.cfg.NameClaim] == nil || claims[o.cfg.GroupsClaim] == nil {
		info, err := p.UserInfo(ctx, oauth2.StaticTokenSource(tok))
		if err != nil {
			return nil, fmt.Errorf("the ID token has no %s or %s, and the user info endpoint: %w", o.cfg.NameClaim, o.cfg.GroupsClaim, err)
		}
		if info.Subject != idt.Subject {
			return nil, fmt.Errorf("the user info is of %q, and the ID token of %q", info.Subject, idt.Subject)
		}
		more := map[string]any{}
		if err := info.Claims(&more); err != nil {
			return nil, fmt.Errorf("the user info's claims: %w", err)
		}
		for k, v := range more {
			if claims[k] == nil {
				claims[k] = v
			}
		}
	}
	name, _ := claims[o.cfg.NameClaim].(string)
	if name == "" {
		return nil, fmt.Errorf("the provider gave no %s claim (name_claim) for subject %s", o.cfg.NameClaim, idt.Subject)
	}
	if o.cfg.NameClaim == "email" {
		if verified, ok := claims["email_verified"].(bool); ok && !verified {
			return nil, fmt.Errorf("the provider has not verified %s's email address", name)
		}
	}
	id := &identity{name: name, groups: stringsOf(claims[o.cfg.GroupsClaim])}
	id.role = o.cfg.Role(id.groups)
	return id, nil
}

// stringsOf reads a claim of one string or of a list of them.
func stringsOf(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
