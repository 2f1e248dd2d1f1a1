package console

import (
	"fmt"

	"github.com/agentmux/agentmux/internal/strength"
	"github.com/agentmux/agentmux/wire"
)

// checkSignIn says what is wrong with how cfg signs people in, or nil.
func checkSignIn(cfg *Config) error {
	if cfg.OIDC != nil {
		if cfg.Token != "" {
			return fmt.Errorf("console: with [console.oidc] people sign in with the identity provider: unset AGENTMUX_CONSOLE_TOKEN (scripts use the API's [[api.tokens]])")
		}
		if bits := strength.Bits(cfg.OIDCSecret); bits < strength.MinBits {
			return fmt.Errorf("console: the client secret in %s carries about %.0f bits, and it signs people's sign-ins, which needs %d: set it to the secret the identity provider issued",
				cfg.OIDC.ClientSecretEnv, bits, strength.MinBits)
		}
	}
	if !Loopback(cfg.Addr) && cfg.Token == "" && cfg.OIDC == nil {
		return fmt.Errorf("console: %s is reachable beyond this machine, and people would answer as anyone: sign them in with [console.oidc] or set AGENTMUX_CONSOLE_TOKEN to a secret they sign in with, or listen on 127.0.0.1", cfg.Addr)
	}
	if cfg.Token != "" {
		if err := strength.Check("AGENTMUX_CONSOLE_TOKEN", cfg.Token); err != nil {
			return fmt.Errorf("console: %w", err)
		}
	}
	if cfg.Token == "" && Loopback(cfg.Addr) && !wire.IsName(cfg.Name) {
		return fmt.Errorf("console: answers on this machine are recorded as human:%s, which cannot be part of a subject: give --as a name of letters, digits, '_' and '-'", cfg.Name)
	}
	return nil
}
