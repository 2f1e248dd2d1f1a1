package bustest

import (
	"context"
	"log/slog"
	"testing"

	"github.com/agentmux/agentmux/ask"
	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/store"
)

// Open starts an embedded NATS server on loopback, connects to it as name, and
// declares the streams and buckets, as a node does; all of it ends with the test.
func Open(t testing.TB, name string, log *slog.Logger) *bus.Bus {
	t.Helper()
	b, err := bus.Open(bus.Config{Listen: "127.0.0.1:0", Name: name}, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	if _, err := store.Declare(context.Background(), b.JS, 0, store.Keep{}, log); err != nil {
		t.Fatal(err)
	}
	return b
}

// Asker starts an Asker on b's connection that asks again after a reconnect, as a
// node's does; it is closed when the test ends.
func Asker(t testing.TB, b *bus.Bus, cfg ask.AskerConfig) *ask.Asker {
	t.Helper()
	a, err := ask.NewAsker(b.Conn, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	b.AfterReconnect(a.Reconnected)
	return a
}
