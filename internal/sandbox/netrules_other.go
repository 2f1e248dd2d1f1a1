//go:build !linux

package sandbox

// NetRules is Landlock's, on Linux; elsewhere it holds nothing.
type NetRules struct{}

// NewNetRules returns rules to share between sandboxes.
func NewNetRules() *NetRules { return &NetRules{} }

// Close lets every ruleset go.
func (r *NetRules) Close() {}
