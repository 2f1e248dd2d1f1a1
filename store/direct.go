package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
)

// directPage is how many messages one direct get brings back.
const directPage = 1000

// The headers nats.go puts a status line's code and text in.
const (
	statusHeader      = "Status"
	descriptionHeader = "Description"
)

// directRequest asks a stream that allows direct gets for up to Batch messages whose
// subject matches NextFor, from sequence Seq on.
type directRequest struct {
	Seq     uint64 `json:"seq,omitempty"`
	NextFor string `json:"next_by_subj"`
	Batch   int    `json:"batch"`
}

// scanDirect is scanSeq for a stream of one replica that allows direct gets (the
// history of events): a page of directPage messages per request, each page bounded by
// scanWait when ctx has no deadline, so a history of any length is read in pages, not
// in a round trip per message. One replica: the server that answers holds every
// message, so a direct get sees no gap. A stream that does not allow them (one declared
// by an older node) is read as scanSeq reads it.
func scanDirect(ctx context.Context, nc *nats.Conn, stream, filter string, from uint64, each func(m *storedMsg) error) error {
	for first := true; ; first = false {
		got, last, more, err := directGet(ctx, nc, stream, directRequest{Seq: from, NextFor: filter, Batch: directPage}, each)
		switch {
		case errors.Is(err, nats.ErrNoResponders) && first:
			return scanSeq(ctx, nc, stream, filter, from, each)
		case err != nil:
			return fmt.Errorf("read %s: %w", stream, err)
		case got == 0 || !more:
			return nil
		}
		from = last + 1
	}
}

// directGet makes one batched direct get and calls each with what it brings, in order.
// It returns how many messages came, the last one's sequence, and whether more match
// after them.
func directGet(ctx context.Context, nc *nats.Conn, stream string, req directRequest, each func(m *storedMsg) error) (got int, last uint64, more bool, err error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, scanWait)
		defer cancel()
	}
	inbox := nc.NewRespInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return 0, 0, false, err
	}
	defer sub.Unsubscribe() //nolint:errcheck // the inbox is this call's alone
	body, _ := json.Marshal(req)
	if err := nc.PublishRequest("$JS.API.DIRECT.GET."+stream, inbox, body); err != nil {
		return 0, 0, false, err
	}
	for {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return got, last, false, err
		}
		switch status := m.Header.Get(statusHeader); status {
		case "":
		case "404":
			return got, last, false, nil // nothing (more) matches
		case "204": // the end of the batch, saying how many match beyond it
			pending, _ := strconv.ParseUint(m.Header.Get("Nats-Num-Pending"), 10, 64)
			return got, last, pending > 0, nil
		case "503":
			return got, last, false, fmt.Errorf("%w: no JetStream answered; is `agentmux up` running on this NATS?", nats.ErrNoResponders)
		default:
			return got, last, false, fmt.Errorf("direct get refused: %s %s", status, m.Header.Get(descriptionHeader))
		}
		seq, err := strconv.ParseUint(m.Header.Get(nats.JSSequence), 10, 64)
		if err != nil {
			return got, last, false, fmt.Errorf("a direct get's message has no sequence: %q", m.Header.Get(nats.JSSequence))
		}
		at, _ := time.Parse(time.RFC3339Nano, m.Header.Get(nats.JSTimeStamp))
		msg := &nats.Msg{Subject: m.Header.Get(nats.JSSubject), Header: m.Header, Data: m.Data}
		got, last = got+1, seq
		if err := each(&storedMsg{msg: msg, seq: seq, time: at}); err != nil {
			return got, last, false, err
		}
	}
}
