package bus

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmux/agentmux/wire"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// BenchmarkStreamPublish publishes audit records, each with its own Nats-Msg-Id, and
// waits for every acknowledgement: with the StreamPublisher the audit uses, and with
// jetstream's PublishMsgAsync, the library's way of doing the same. Run with -count to
// interleave them on the same server (issue 28: the hand-written publisher stays only
// if it is measurably cheaper).
func BenchmarkStreamPublish(b *testing.B) {
	bus := open(b, Config{Listen: "127.0.0.1:0", Name: "streampub-bench"})
	auditStream(b, bus)
	record := []byte(`{"kind":"answer","node":"n1","host":"w","session":"s-1","request":"q1","type":"approval","value":"yes","decider":"rule:ops"}`)
	msg := func(i int, run string) *nats.Msg {
		return &nats.Msg{Subject: wire.AuditSubject("w", "s-1"), Data: record,
			Header: nats.Header{jetstream.MsgIDHeader: []string{run + strconv.Itoa(i)}}}
	}
	runs := 0
	b.Run("StreamPublisher", func(b *testing.B) {
		runs++
		run := "sp" + strconv.Itoa(runs) + "-"
		var failed atomic.Int32
		p, err := NewStreamPublisher(bus.Conn, StreamPublisherConfig{AckTimeout: 10 * time.Second,
			Acked: func(*nats.Msg) {}, Failed: func(*nats.Msg, error) { failed.Add(1) }})
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if err := p.Publish(msg(i, run)); err != nil {
				b.Fatal(err)
			}
			i++
		}
		<-p.Idle()
		if n := failed.Load(); n > 0 {
			b.Fatalf("%d not acknowledged", n)
		}
	})
	b.Run("PublishMsgAsync", func(b *testing.B) {
		runs++
		run := "pa" + strconv.Itoa(runs) + "-"
		js, err := jetstream.New(bus.Conn)
		if err != nil {
			b.Fatal(err)
		}
		futures := make([]jetstream.PubAckFuture, 0, 1<<16)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			f, err := js.PublishMsgAsync(msg(i, run))
			if err != nil {
				b.Fatal(err)
			}
			futures = append(futures, f)
			i++
		}
		<-js.PublishAsyncComplete()
		for _, f := range futures {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				b.Fatal(err)
			}
		}
	})
}
