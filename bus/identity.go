package bus

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// Identity is who a client is on the bus: a user and password, a .creds file (a user
// JWT and its seed, for servers in operator mode), or an nkey seed. The zero Identity
// is anonymous.
type Identity struct {
	User, Password string
	Credentials    string
	NkeySeedFile   string
}

// TLS is the certificate setup of the embedded server and its clients: the server's
// certificate and key, the CA everyone trusts, whether clients and routes must present
// a certificate, and the certificate a client presents then.
type TLS struct {
	Cert, Key, CA         string
	Verify                bool
	ClientCert, ClientKey string
}

// Anonymous reports whether id names nobody.
func (id Identity) Anonymous() bool {
	return id.User == "" && id.Credentials == "" && id.NkeySeedFile == ""
}

// Name is the name the bus knows id by: the user, the name in the .creds' JWT, or the
// public key of the nkey seed (which names maps to a user's name, when it knows it).
func (id Identity) Name(names map[string]string) (string, error) {
	switch {
	case id.User != "":
		return id.User, nil
	case id.Credentials != "":
		data, err := os.ReadFile(id.Credentials)
		if err != nil {
			return "", fmt.Errorf("bus: credentials: %w", err)
		}
		token, err := jwt.ParseDecoratedJWT(data)
		if err != nil {
			return "", fmt.Errorf("bus: credentials %s: %w", id.Credentials, err)
		}
		claims, err := jwt.DecodeUserClaims(token)
		if err != nil {
			return "", fmt.Errorf("bus: credentials %s hold no user JWT: %w", id.Credentials, err)
		}
		if claims.Name != "" {
			return claims.Name, nil
		}
		return claims.Subject, nil
	case id.NkeySeedFile != "":
		seed, err := os.ReadFile(id.NkeySeedFile)
		if err != nil {
			return "", fmt.Errorf("bus: nkey seed: %w", err)
		}
		kp, err := nkeys.FromSeed([]byte(strings.TrimSpace(string(seed))))
		if err != nil {
			return "", fmt.Errorf("bus: nkey seed %s: %w", id.NkeySeedFile, err)
		}
		pub, _ := kp.PublicKey()
		if name, ok := names[pub]; ok {
			return name, nil
		}
		return pub, nil
	}
	return "", nil
}

func (id Identity) options() ([]nats.Option, error) {
	switch {
	case id.Credentials != "":
		if _, err := os.Stat(id.Credentials); err != nil {
			return nil, fmt.Errorf("bus: credentials: %w; set [nats] credentials or AGENTMUX_NATS_CREDS to a .creds file", err)
		}
		return []nats.Option{nats.UserCredentials(id.Credentials)}, nil
	case id.NkeySeedFile != "":
		opt, err := nats.NkeyOptionFromSeed(id.NkeySeedFile)
		if err != nil {
			return nil, fmt.Errorf("bus: nkey seed: %w; set [nats] nkey_seed_file to a file holding a user seed (\"SU…\")", err)
		}
		return []nats.Option{opt}, nil
	case id.User != "":
		return []nats.Option{nats.UserInfo(id.User, id.Password)}, nil
	}
	return nil, nil
}

// clientOptions trust CA and present the client certificate (or, for a node's own
// connection, the server's) when the server verifies them.
func (t *TLS) clientOptions() []nats.Option {
	if t == nil {
		return nil
	}
	var opts []nats.Option
	if t.CA != "" {
		opts = append(opts, nats.RootCAs(t.CA))
	}
	switch {
	case t.ClientCert != "":
		opts = append(opts, nats.ClientCert(t.ClientCert, t.ClientKey))
	case t.Verify && t.Cert != "":
		opts = append(opts, nats.ClientCert(t.Cert, t.Key))
	}
	return opts
}

// serverConfig is the tls.Config of the embedded server's listener and routes.
func (t *TLS) serverConfig() (*tls.Config, error) {
	cfg, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: t.Cert, KeyFile: t.Key, CaFile: t.CA, Verify: t.Verify})
	if err != nil {
		return nil, fmt.Errorf("bus: [nats.tls]: %w; check cert, key and ca", err)
	}
	return cfg, nil
}

// connectError says why a connection was refused and what to do; unreachable is the
// hint when nothing answered at url.
func connectError(url string, id Identity, err error, unreachable string) error {
	switch {
	case errors.Is(err, nats.ErrAuthorization), errors.Is(err, nats.ErrAuthExpired), errors.Is(err, nats.ErrAuthRevoked):
		who := "anonymous clients are"
		switch {
		case id.User != "":
			who = fmt.Sprintf("user %q was", id.User)
		case id.Credentials != "":
			who = "the credentials " + id.Credentials + " were"
		case id.NkeySeedFile != "":
			who = "the nkey in " + id.NkeySeedFile + " was"
		}
		hint := "set [nats] user and password_env, or AGENTMUX_NATS_USER and AGENTMUX_NATS_PASSWORD, or AGENTMUX_NATS_CREDS"
		if id.User != "" {
			hint = "the password is wrong or the user unknown: check AGENTMUX_NATS_PASSWORD (or the variable [nats] password_env names) and [[nats.users]]"
		}
		return fmt.Errorf("bus: %s refused by %s: %w; %s", who, url, err, hint)
	case strings.Contains(err.Error(), "tls:") || strings.Contains(err.Error(), "x509:") || errors.Is(err, nats.ErrSecureConnRequired):
		return fmt.Errorf("bus: TLS to %s: %w; set [nats.tls] ca to the CA that signed the server's certificate (and client_cert, client_key when it verifies clients)", url, err)
	}
	return fmt.Errorf("bus: connect to %s: %w; %s", url, err, unreachable)
}

// PermissionError is a subject the server refused to let a user publish or subscribe
// to, and the roles that would allow it.
type PermissionError struct {
	User    string
	Publish bool
	Subject string
	Roles   []Role
}

func (e *PermissionError) Error() string {
	verb := "subscribe to"
	if e.Publish {
		verb = "publish to"
	}
	who := "this identity"
	if e.User != "" {
		who = fmt.Sprintf("user %q", e.User)
	}
	if len(e.Roles) == 0 {
		return fmt.Sprintf("permission denied: %s may not %s %q, and no role may", who, verb, e.Subject)
	}
	roles := make([]string, len(e.Roles))
	for i, r := range e.Roles {
		roles[i] = string(r)
	}
	list := roles[len(roles)-1]
	if n := len(roles); n > 1 {
		list = strings.Join(roles[:n-1], ", ") + " or " + roles[n-1]
	}
	return fmt.Sprintf("permission denied: %s may not %s %q; role %s may", who, verb, e.Subject, list)
}

var violation = regexp.MustCompile(`(?i)(publish|subscription) to "([^"]+)"`)

// Refusal turns a permission violation the server reported into a PermissionError;
// nil for any other error.
func Refusal(err error, user string) *PermissionError {
	if !errors.Is(err, nats.ErrPermissionViolation) {
		return nil
	}
	m := violation.FindStringSubmatch(err.Error())
	if m == nil {
		return &PermissionError{User: user}
	}
	pub := strings.EqualFold(m[1], "publish")
	return &PermissionError{User: user, Publish: pub, Subject: m[2], Roles: RolesAllowing(user, pub, m[2])}
}
