//go:build !linux

package shim

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/agentmux/agentmux/internal/proctest"
)

// TestMain fails the package's tests if any of them leaves a goroutine running. (The
// shim's tests of process lifetimes read /proc and cgroups: shim_linux_test.go.)
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, proctest.Leaks()...) }
