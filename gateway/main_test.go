package gateway

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/agentmux/agentmux/internal/proctest"
)

// TestMain fails the package's tests if any of them leaves a goroutine running.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, proctest.Leaks()...) }
