package console

import (
	"log/slog"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentmux/agentmux/api"
	"github.com/agentmux/agentmux/internal/proctest"
)

// TestMain fails the package's tests if any of them leaves a goroutine running.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, proctest.Leaks()...) }

// offline is a console on 127.0.0.1:9470 with no bus, signing people in by gate: its
// handler, for what it does before it reaches the fleet.
func offline(t *testing.T, gate *gate) *Server {
	s := &Server{cfg: Config{Addr: "127.0.0.1:9470", Log: slog.New(slog.DiscardHandler)}, view: newView(defaultRecent), tries: newThrottle(), gate: gate}
	var err error
	if s.api, err = api.New(api.Config{Page: page{s}, Log: s.cfg.Log}); err != nil {
		t.Fatal(err)
	}
	s.routes()
	return s
}
