package store

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/wire"
)

// TestWatchWaitsForQuorum: a node whose server has lost its cluster's majority (as a
// restarted server has, until it catches up with its peers) cannot start a watch of
// the nodes bucket; it tries again, and the watch starts, with the bucket's entries,
// once the majority is back. It does not fail on JetStream's first refusal.
func TestWatchWaitsForQuorum(t *testing.T) {
	cfgs := clusterConfigs(t, 3)
	buses := make([]*bus.Bus, 3)
	var wg sync.WaitGroup
	for i := range buses { // a cluster declares its streams once a majority is up
		wg.Go(func() { buses[i] = openCluster(t, cfgs[i]) })
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	ctx := context.Background()
	nodes, err := OpenNodes(ctx, buses[0].JS)
	if err != nil {
		t.Fatal(err)
	}
	if err := nodes.Put(ctx, &wire.NodeInfo{Name: "a", Heartbeat: time.Now(), Supervisors: []string{"s"}}); err != nil {
		t.Fatal(err)
	}
	// Each request to start a watch of the bucket, as the test sees it: a second one
	// means the first was refused and the watch tried again.
	starts := make(chan string, 64)
	sub, err := buses[0].Conn.Subscribe("$JS.API.CONSUMER.CREATE.>", func(m *nats.Msg) {
		if strings.Contains(m.Subject, "KV_"+wire.NodesBucket) {
			starts <- m.Subject
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	buses[1].Close()
	buses[2].Close()

	var (
		mu   sync.Mutex
		seen = map[string]*wire.NodeInfo{}
	)
	result := make(chan error, 1)
	watchCtx, stop := context.WithCancel(ctx)
	ended := make(chan struct{})
	t.Cleanup(func() { stop(); <-ended })
	go func() {
		err := nodes.Watch(watchCtx, func(node string, info *wire.NodeInfo) {
			mu.Lock()
			defer mu.Unlock()
			seen[node] = info
		}, func() { close(ended) })
		if err != nil {
			close(ended)
		}
		result <- err
	}()
	for i := range 2 {
		select {
		case s := <-starts:
			t.Logf("the watch asks %s", s)
		case err := <-result:
			t.Fatalf("the watch ended (%v) after %d tries, with the majority away; want it tried again", err, i)
		case <-time.After(bucketWait):
			t.Fatalf("%d tries to start the watch in %v", i, bucketWait)
		}
	}
	buses[1] = openCluster(t, cfgs[1]) // on its store: the majority is back
	select {
	case err := <-result:
		if err != nil {
			t.Fatalf("the watch, with the majority back: %v", err)
		}
	case <-time.After(2 * bucketWait):
		t.Fatal("the watch did not start with the majority back")
	}
	proctest.Eventually(t, "the watch has the node", func() bool {
		mu.Lock()
		defer mu.Unlock()
		n := seen["a"]
		return len(seen) == 1 && n != nil && slices.Equal(n.Supervisors, []string{"s"})
	})
}

// clusterConfigs are n embedded servers of one cluster, each on its own ports and store.
func clusterConfigs(t *testing.T, n int) []bus.Config {
	routes := make([]string, n)
	for i := range routes {
		routes[i] = fmt.Sprintf("nats://127.0.0.1:%d", proctest.FreePort(t))
	}
	dir := t.TempDir()
	cfgs := make([]bus.Config, n)
	for i := range cfgs {
		name := fmt.Sprintf("s%d", i+1)
		cfgs[i] = bus.Config{
			Listen: "127.0.0.1:0", StoreDir: filepath.Join(dir, name), ServerName: name, Name: name,
			Cluster: &bus.ClusterConfig{
				Name: "test", Listen: strings.TrimPrefix(routes[i], "nats://"),
				Routes: append(append([]string{}, routes[:i]...), routes[i+1:]...),
			},
		}
	}
	return cfgs
}

// openCluster opens one server of a cluster and declares the streams and buckets on
// it, which the cluster takes once a majority is up; it may be called from several
// goroutines.
func openCluster(t *testing.T, cfg bus.Config) *bus.Bus {
	b, err := bus.Open(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Errorf("open %s: %v", cfg.ServerName, err)
		return nil
	}
	t.Cleanup(b.Close)
	if _, err := Declare(context.Background(), b.JS, 0, Keep{}, slog.New(slog.DiscardHandler)); err != nil {
		t.Errorf("declare on %s: %v", cfg.ServerName, err)
	}
	return b
}

// TestHeartbeatsCarryTheServersTime: what a node's heartbeat says of its own clock (two
// minutes ahead here) does not decide its liveness; List and Watch give the server's
// time of storing it, and List the server's time now.
func TestHeartbeatsCarryTheServersTime(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	nodes, err := OpenNodes(ctx, b.JS)
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	if err := nodes.Put(ctx, &wire.NodeInfo{Name: "ahead", Heartbeat: before.Add(2 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	list, serverNow, err := nodes.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	// The embedded server runs on this machine's clock: its stamps fall within the test's.
	if len(list) != 1 || list[0].Stored.Before(before.Add(-time.Second)) || list[0].Stored.After(after) {
		t.Fatalf("listed %+v; want one heartbeat stored between %v and %v", list, before, after)
	}
	if serverNow.Before(list[0].Stored) || serverNow.After(after.Add(time.Second)) || !list[0].Alive(serverNow) {
		t.Fatalf("the server's time %v for a heartbeat stored at %v: want it alive", serverNow, list[0].Stored)
	}
	watched := make(chan *wire.NodeInfo, 1)
	watching, stop := context.WithCancel(ctx)
	ended := make(chan struct{})
	if err := nodes.Watch(watching, func(_ string, info *wire.NodeInfo) { watched <- info }, func() { close(ended) }); err != nil {
		t.Fatal(err)
	}
	defer func() { stop(); <-ended }()
	if info := <-watched; !info.Stored.Equal(list[0].Stored) {
		t.Fatalf("the watch stamps %v; the list %v", info.Stored, list[0].Stored)
	}
}
