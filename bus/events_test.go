package bus

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/wire"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// TestPublishEventTruncatesWhatTheServerWouldRefuse: an event within the server's
// payload limit goes out as it is; one over it goes out as a stub saying how big it was,
// instead of failing the publish.
func TestPublishEventTruncatesWhatTheServerWouldRefuse(t *testing.T) {
	srv := proctest.Server(t, &server.Options{Host: "127.0.0.1", Port: -1, MaxPayload: 4096, NoSigs: true})
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync(wire.EventSubject("w", "s-1", ">"))
	if err != nil {
		t.Fatal(err)
	}
	small := `{"type":"progress","message":"working"}`
	big := `{"type":"partial","text":"` + strings.Repeat("x", 8000) + `"}`
	for _, data := range []string{small, big} {
		if err := PublishEvent(nc, "w", "s-1", "progress", []byte(data)); err != nil {
			t.Fatalf("publish %d bytes: %v", len(data), err)
		}
	}
	for _, want := range []string{small, fmt.Sprintf(`{"truncated":true,"bytes":%d}`, len(big))} {
		m, err := sub.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if string(m.Data) != want || m.Subject != "agentmux.evt.w.s-1.progress" {
			t.Errorf("event %s on %s; want %s", m.Data, m.Subject, want)
		}
	}
}
