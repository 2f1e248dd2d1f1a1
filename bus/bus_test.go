package bus

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmux/agentmux/wire"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func open(t testing.TB, cfg Config) *Bus {
	t.Helper()
	b, err := Open(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// auditStream creates the audit stream, as store.Declare does: the bus declares nothing.
func auditStream(t testing.TB, b *Bus) {
	t.Helper()
	cfg := jetstream.StreamConfig{Name: wire.AuditStream, Subjects: []string{wire.AuditSubjects}, Duplicates: 2 * time.Minute}
	if _, err := b.JS.CreateStream(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
}

func TestEmbeddedServerKeepsItsStoreAndLetsTheLocalOperatorIn(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	state := t.TempDir()
	b := open(t, Config{Listen: "127.0.0.1:0", StoreDir: dir, StateDir: state, Name: "bus-test"})
	if _, err := os.Stat(filepath.Join(dir, "jetstream")); err != nil {
		t.Fatalf("store not in the configured dir: %v", err)
	}
	// No anonymous client gets in; a CLI client reaches the node through its client
	// URL as the local operator, whose seed the bus wrote for this user alone.
	if nc, err := Connect(Client{URL: b.ClientURL(), Name: "anonymous"}); err == nil || !strings.Contains(err.Error(), "anonymous clients are refused") {
		if nc != nil {
			nc.Close()
		}
		t.Fatalf("an anonymous client: %v", err)
	}
	seed := b.LocalOperator()
	if st, err := os.Stat(seed); err != nil || st.Mode().Perm() != 0o600 || filepath.Dir(seed) != state {
		t.Fatalf("the local operator's seed %q: %v %v", seed, st, err)
	}
	nc, err := Connect(Client{URL: b.ClientURL(), Name: "cli", Identity: Identity{NkeySeedFile: seed}, User: LocalUser})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Request(wire.CtlSubject("nobody", "list"), nil, time.Second); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("the local operator's request: %v", err)
	}
	nc.Close()
	// A bus started again on the same port takes the same seed up: a client that
	// follows the node reconnects.
	kept, err := os.ReadFile(seed)
	if err != nil {
		t.Fatal(err)
	}
	url := b.ClientURL()
	b.Close()
	again := open(t, Config{Listen: strings.TrimPrefix(url, "nats://"), StoreDir: dir, StateDir: state, Name: "bus-test"})
	if now, err := os.ReadFile(again.LocalOperator()); err != nil || string(now) != string(kept) || again.LocalOperator() != seed {
		t.Fatalf("the seed after a restart: %s %v; want the same %s", again.LocalOperator(), err, seed)
	}
	nc, err = Connect(Client{URL: again.ClientURL(), Name: "cli", Identity: Identity{NkeySeedFile: seed}, User: LocalUser})
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
}

func TestTemporaryStoreIsRemovedOnClose(t *testing.T) {
	b, err := Open(Config{Listen: "127.0.0.1:0"}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	dir := b.tempDir
	if dir == "" {
		t.Fatal("no temporary store")
	}
	b.Close()
	b.Close() // idempotent
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("temporary store %s still there: %v", dir, err)
	}
}

func TestErrorsSayWhatToDo(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Listen: "localhost"}, "use host:port"},
		{Config{Listen: "127.0.0.1:99999"}, "bad port"},
		{Config{URL: "nats://" + closedAddr(t)}, "check [nats] url"},
	} {
		_, err := Open(c.cfg, slog.New(slog.DiscardHandler))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open(%+v) = %v; want an error saying %q", c.cfg, err, c.want)
		}
	}
	if _, err := Connect(Client{URL: "nats://" + closedAddr(t), Name: "cli"}, nats.Timeout(time.Second)); err == nil || !strings.Contains(err.Error(), "is `agentmux up` running") {
		t.Errorf("Connect to nothing = %v", err)
	}
}

// closedAddr is an address nothing listens on.
func closedAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestTakenPortsSayWhich: a node whose client or cluster port another process holds
// fails at once, with the server's own reason, not after a wait with a guess.
func TestTakenPortsSayWhich(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	for name, cfg := range map[string]Config{
		"client":  {Listen: addr},
		"cluster": {Listen: "127.0.0.1:0", ServerName: "s1", Cluster: &ClusterConfig{Name: "c", Listen: addr, Routes: []string{"nats://127.0.0.1:1"}}},
	} {
		begun := time.Now()
		_, err := Open(cfg, slog.New(slog.DiscardHandler))
		if !errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), "address already in use") ||
			!strings.Contains(err.Error(), "check the manifest's [nats] and [nats.cluster]") {
			t.Errorf("%s port taken: %v; want the server's reason and what to check", name, err)
		}
		if took := time.Since(begun); took >= readyTimeout {
			t.Errorf("%s port taken: failed after %v; want at once, not after the %v allowed a slow start", name, took, readyTimeout)
		}
	}
}
