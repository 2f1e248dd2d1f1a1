// Package strength estimates what a secret carries, so that a token chosen by a person
// ("Password123Password123!") is refused where a random one passes: the console's
// sign-in token, its identity provider's client secret and the API's bearer tokens are
// held to MinBits.
//
//	if err := strength.Check("AGENTMUX_CONSOLE_TOKEN", token); err != nil {
//		return err
//	}
package strength
