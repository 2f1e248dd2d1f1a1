package bus

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
)

// Readers of the bus (operators, viewers, the console) read streams and buckets with
// JetStream's direct gets, never with a consumer: a consumer's creator chooses where it
// delivers, and the server does not check that the creator may receive there, so a
// reader allowed to create one could aim a stream at any subject (bus.CheckRequest).
// Direct gets need only $JS.API.DIRECT.GET, and a stream that allows them.

const (
	// scanBatch is how many messages one direct get of a scan asks for.
	scanBatch = 256
	// scanWait bounds the wait for one batch when the caller's context does not.
	scanWait = 10 * time.Second
)

// directGetRequest is the body of a batched direct get ($JS.API.DIRECT.GET.<stream>):
// up to Batch messages from sequence Seq on whose subjects match NextFor.
type directGetRequest struct {
	Seq     uint64 `json:"seq,omitempty"`
	NextFor string `json:"next_by_subj"`
	Batch   int    `json:"batch"`
}

// Headers of a direct get's answers.
const (
	headerSequence   = "Nats-Sequence"
	headerNumPending = "Nats-Num-Pending"
)

// scan calls each with every message of stream whose subject filter matches, oldest
// first, including those stored while it reads; each's error ends the scan.
func scan(ctx context.Context, nc *nats.Conn, stream, filter string, each func(*nats.Msg) error) error {
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return fmt.Errorf("read %s: %w", stream, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	var from uint64
	for {
		req, _ := json.Marshal(directGetRequest{Seq: from, NextFor: filter, Batch: scanBatch})
		if err := nc.PublishRequest("$JS.API.DIRECT.GET."+stream, inbox, req); err != nil {
			return fmt.Errorf("read %s: %w", stream, err)
		}
		last, more, err := readBatch(ctx, sub, each)
		if err != nil {
			return fmt.Errorf("read %s: %w", stream, err)
		}
		if !more {
			return nil
		}
		from = last + 1
	}
}

// readBatch reads one batch's answers: its messages, then its end, which says whether
// more messages follow the last one (last is its sequence).
func readBatch(ctx context.Context, sub *nats.Subscription, each func(*nats.Msg) error) (last uint64, more bool, err error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, scanWait)
		defer cancel()
	}
	for {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return last, false, fmt.Errorf("%w (JetStream did not answer a direct get: is `runtime up` running on this NATS?)", err)
		}
		switch status := m.Header.Get(headerStatus); status {
		case "":
			seq, err := strconv.ParseUint(m.Header.Get(headerSequence), 10, 64)
			if err != nil {
				return last, false, fmt.Errorf("a direct get's answer has no %s header", headerSequence)
			}
			last = seq
			if err := each(m); err != nil {
				return last, false, err
			}
		case "204": // the end of the batch
			pending, _ := strconv.ParseUint(m.Header.Get(headerNumPending), 10, 64)
			return last, pending > 0 && last > 0, nil
		case "404": // nothing (more) matches
			return last, false, nil
		case "503":
			return last, false, fmt.Errorf("no JetStream answered (503): is `runtime up` running on this NATS?")
		default:
			return last, false, fmt.Errorf("direct get refused: %s %s", status, m.Header.Get("Description"))
		}
	}
}
