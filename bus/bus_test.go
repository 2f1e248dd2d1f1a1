package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func open(t testing.TB, cfg Config) *Bus {
	t.Helper()
	b, err := Open(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

func TestEmbeddedServerDeclaresTheStreams(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	state := t.TempDir()
	b := open(t, Config{Listen: "127.0.0.1:0", StoreDir: store, StateDir: state, Name: "bus-test"})
	ctx := context.Background()
	tasks, err := b.JS.Stream(ctx, TaskStream)
	if err != nil {
		t.Fatal(err)
	}
	if c := tasks.CachedInfo().Config; c.Retention != jetstream.WorkQueuePolicy || c.Subjects[0] != "agentmux.task.>" {
		t.Fatalf("task stream %+v", c)
	}
	if _, err := os.Stat(filepath.Join(store, "jetstream")); err != nil {
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
	if _, err := nc.Request(CtlSubject("nobody", "list"), nil, time.Second); !errors.Is(err, nats.ErrNoResponders) {
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
	again := open(t, Config{Listen: strings.TrimPrefix(url, "nats://"), StoreDir: store, StateDir: state, Name: "bus-test"})
	if now, err := os.ReadFile(again.LocalOperator()); err != nil || string(now) != string(kept) || again.LocalOperator() != seed {
		t.Fatalf("the seed after a restart: %s %v; want the same %s", again.LocalOperator(), err, seed)
	}
	nc, err = Connect(Client{URL: again.ClientURL(), Name: "cli", Identity: Identity{NkeySeedFile: seed}, User: LocalUser})
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
}

func TestAuditIsDeduplicatedByMessageID(t *testing.T) {
	b := open(t, Config{Listen: "127.0.0.1:0"})
	ctx := context.Background()
	for range 3 {
		if _, err := b.JS.Publish(ctx, AuditSubject("w", "s1"), []byte(`{"kind":"answer"}`), jetstream.WithMsgID("s1.q1.answer")); err != nil {
			t.Fatal(err)
		}
	}
	if n := storedMsgs(t, b, AuditStream); n != 1 {
		t.Fatalf("audit stream holds %d records; the same message id must be stored once", n)
	}
}

// storedMsgs is how many messages stream holds.
func storedMsgs(t *testing.T, b *Bus, stream string) uint64 {
	t.Helper()
	ctx := context.Background()
	s, err := b.JS.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

func TestTemporaryStoreIsRemovedOnClose(t *testing.T) {
	b, err := Open(context.Background(), Config{Listen: "127.0.0.1:0"}, slog.New(slog.DiscardHandler))
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
		_, err := Open(context.Background(), c.cfg, slog.New(slog.DiscardHandler))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open(%+v) = %v; want an error saying %q", c.cfg, err, c.want)
		}
	}
	if _, err := Connect(Client{URL: "nats://" + closedAddr(t), Name: "cli"}, nats.Timeout(time.Second)); err == nil || !strings.Contains(err.Error(), "is `runtime up` running") {
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

func TestSubjects(t *testing.T) {
	for got, want := range map[string]string{
		EventSubject("w", "s1", "question"): "agentmux.evt.w.s1.question",
		SessionEvents("w", "s1"):            "agentmux.evt.w.s1.>",
		AskSubject("security"):              "agentmux.ask.security",
		TaskSubject("w"):                    "agentmux.task.w",
		AuditSubject("w", "s1"):             "agentmux.audit.w.s1",
		CtlSubject("n1", "list"):            "agentmux.ctl.n1.list",
		ToolSubject("sql"):                  "agentmux.tool.sql",
	} {
		if got != want {
			t.Errorf("%s; want %s", got, want)
		}
	}
}

func TestReplicasOnALoneServer(t *testing.T) {
	if b := open(t, Config{Listen: "127.0.0.1:0"}); b.Replicas != 1 {
		t.Fatalf("a lone server's streams have %d replicas; want 1", b.Replicas)
	}
	_, err := Open(context.Background(), Config{Listen: "127.0.0.1:0", Replicas: 3}, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "this server is not in a cluster: set [nats] replicas = 1") {
		t.Fatalf("replicas = 3 on a lone server: %v", err)
	}
}

// ReadAudit returns every record a session has when the read begins, on each of many
// reads right after the records were stored, and only that session's.
func TestReadAuditReturnsEverySessionRecord(t *testing.T) {
	b := open(t, Config{Listen: "127.0.0.1:0"})
	ctx := context.Background()
	for i := range 40 {
		session := fmt.Sprintf("s%d", i)
		for _, what := range []string{"started", "r1.request", "r1.answer", "ended"} {
			if _, err := b.JS.Publish(ctx, AuditSubject("w", session), []byte(`{"kind":"`+what+`","session":"`+session+`"}`), jetstream.WithMsgID(session+"."+what)); err != nil {
				t.Fatal(err)
			}
		}
		records, err := ReadAudit(ctx, b.JS, session)
		if err != nil {
			t.Fatal(err)
		}
		if len(records) != 4 || records[0].Kind != "started" || records[3].Kind != "ended" || records[3].Session != session {
			t.Fatalf("read %d records of %s: %+v", len(records), session, records)
		}
	}
	if records, err := ReadAudit(ctx, b.JS, "nobody"); err != nil || len(records) != 0 {
		t.Fatalf("a session without records: %v %v", records, err)
	}
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
		_, err := Open(context.Background(), cfg, slog.New(slog.DiscardHandler))
		if !errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), "address already in use") ||
			!strings.Contains(err.Error(), "check the manifest's [nats] and [nats.cluster]") {
			t.Errorf("%s port taken: %v; want the server's reason and what to check", name, err)
		}
		if took := time.Since(begun); took >= readyTimeout {
			t.Errorf("%s port taken: failed after %v; want at once, not after the %v allowed a slow start", name, took, readyTimeout)
		}
	}
}
