package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/agentmux/agentmux/wire"
)

// TestCheckpointsKeepTheLatest: a session's checkpoints are listed in the order they
// were taken, a reader's listing says their parts' sizes and digests, the latest N are
// kept with their parts and the older ones go, replaced by the newer ones' writes;
// another session's are its own. Alike for checkpoints of one message each and for
// those too large for one, kept as objects.
func TestCheckpointsKeepTheLatest(t *testing.T) {
	b := open(t)
	for _, kind := range []string{"entry", "object"} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			st, err := OpenCheckpoints(ctx, b.JS, 2)
			if err != nil {
				t.Fatal(err)
			}
			if kind == "object" {
				st.entryMax = 8
			}
			keepsTheLatest(t, st, b.Conn, kind)
		})
	}
}

func keepsTheLatest(t *testing.T, st *Checkpoints, nc *nats.Conn, kind string) {
	ctx := context.Background()
	s1, s10 := kind+"-1", kind+"-10"
	var first *wire.Checkpoint
	for seq := 1; seq <= 3; seq++ {
		c := &wire.Checkpoint{Session: s1, Seq: seq, Host: "w", Node: "n", Why: "agent"}
		if err := st.Put(ctx, c, map[string][]byte{"state": fmt.Appendf(nil, `{"step":%d}`, seq)}); err != nil {
			t.Fatal(err)
		}
		if seq == 1 {
			first = c
		}
	}
	if err := st.Put(ctx, &wire.Checkpoint{Session: s10, Seq: 1}, map[string][]byte{"state": []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	listed, err := ListCheckpoints(ctx, nc, s1)
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 2 || listed[0].Seq != 2 || listed[1].Seq != 3 || listed[1].Bytes != 10 || len(listed[1].Parts) != 1 ||
		listed[1].Parts[0].Name != "state" || len(listed[1].Parts[0].SHA256) != 64 {
		t.Fatalf("listed %+v; want seqs 2 and 3, with their part", listed)
	}
	if (kind == "entry") != (listed[1].Entry != "") || (kind == "object") != (listed[1].Object != "") {
		t.Errorf("checkpoint %+v; want its parts kept as an %s", listed[1], kind)
	}
	latest, err := st.Find(ctx, s1, 0)
	if err != nil || latest.Seq != 3 {
		t.Fatalf("latest %+v %v", latest, err)
	}
	if data, err := st.Part(ctx, latest, "state"); err != nil || string(data) != `{"step":3}` {
		t.Errorf("the latest state: %s %v", data, err)
	}
	if _, err := st.Find(ctx, s1, 1); !errors.Is(err, ErrNoCheckpoint) {
		t.Errorf("the first checkpoint, past the latest 2: %v; want it gone", err)
	}
	if data, err := st.Part(ctx, first, "state"); err == nil || !strings.Contains(err.Error(), "not what was written") {
		t.Errorf("the first checkpoint's part, as it was listed: %s %v; want it gone, its place taken by the third", data, err)
	}
	other, err := ListCheckpoints(ctx, nc, s10)
	if err != nil || len(other) != 1 {
		t.Errorf("%s's checkpoints: %+v %v", s10, other, err)
	}
}

// BenchmarkCheckpointPut is what keeping a checkpoint costs on an embedded server with
// file storage: a state of 16 KiB or 1 MiB with its place, listed, in the place of the
// session's checkpoint that falls out of the latest 3.
func BenchmarkCheckpointPut(b *testing.B) {
	for _, size := range []int{16 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("state=%dKiB", size>>10), func(b *testing.B) {
			bus := open(b)
			ctx := context.Background()
			st, err := OpenCheckpoints(ctx, bus.JS, 3)
			if err != nil {
				b.Fatal(err)
			}
			state := []byte(`{"notes":"` + strings.Repeat("the spec says so; ", size/18) + `"}`)
			place := []byte(`{"prompt":"take three steps","attempt":0}`)
			b.SetBytes(int64(len(state)))
			b.ResetTimer()
			for i := range b.N {
				if err := st.Put(ctx, &wire.Checkpoint{Session: "s-bench", Seq: i + 1}, map[string][]byte{"state": state, "place": place}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
