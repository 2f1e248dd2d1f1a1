//go:build !linux

package sandbox

import "net"

// Guard is ln: outside Linux there is no cgroup to know a node's programs by, and a
// program started before the listener may connect to it (docs/security.md).
func Guard(ln net.Listener) net.Listener { return ln }
