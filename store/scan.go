package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
)

// Readers of the bus (operators, viewers, the console) read streams and buckets with
// JetStream's message gets, never with a consumer: a consumer's creator chooses where
// it delivers, and the server does not check that the creator may receive there, so a
// reader allowed to create one could aim a stream at any subject (bus.CheckRequest). A
// message get ($JS.API.STREAM.MSG.GET) is answered by the stream's leader, so a read
// sees every message stored before it; a direct get may be answered by a replica still
// catching up, with a gap in what it holds.

// scanWait bounds one message get when the caller's context does not.
const scanWait = 10 * time.Second

// msgGetRequest asks for the first message from sequence Seq on whose subject matches
// NextFor.
type msgGetRequest struct {
	Seq       uint64     `json:"seq,omitempty"`
	NextFor   string     `json:"next_by_subj"`
	StartTime *time.Time `json:"start_time,omitempty"` // the first message stored at or after it (no Seq then)
}

// msgGetResponse is a message get's answer: the message, or an error (404 at the end).
type msgGetResponse struct {
	Message *struct {
		Subject string    `json:"subject"`
		Seq     uint64    `json:"seq"`
		Header  []byte    `json:"hdrs"`
		Data    []byte    `json:"data"`
		Time    time.Time `json:"time"`
	} `json:"message"`
	Error *struct {
		Code        int    `json:"code"`
		Description string `json:"description"`
	} `json:"error"`
}

// errNoMessage is a message get's answer when no message matches.
var errNoMessage = errors.New("no message found")

// scan calls each with every message of stream whose subject filter matches, oldest
// first, including those stored while it reads; each's error ends the scan. The
// messages each gets have the stream's subject, headers and data, their sequence and
// the server's time of storing them.
func scan(ctx context.Context, nc *nats.Conn, stream, filter string, each func(m *storedMsg) error) error {
	return scanFrom(ctx, nc, stream, filter, time.Time{}, each)
}

// scanFrom is scan from the first message stored at or after since (zero: the first).
func scanFrom(ctx context.Context, nc *nats.Conn, stream, filter string, since time.Time, each func(m *storedMsg) error) error {
	return scanAt(ctx, nc, stream, filter, 0, since, each)
}

// scanSeq is scan from sequence from on.
func scanSeq(ctx context.Context, nc *nats.Conn, stream, filter string, from uint64, each func(m *storedMsg) error) error {
	return scanAt(ctx, nc, stream, filter, from, time.Time{}, each)
}

func scanAt(ctx context.Context, nc *nats.Conn, stream, filter string, from uint64, since time.Time, each func(m *storedMsg) error) error {
	for seq := from; ; seq++ {
		req := msgGetRequest{Seq: seq, NextFor: filter}
		if seq == 0 && !since.IsZero() {
			req.StartTime = &since
		}
		m, err := msgGet(ctx, nc, stream, req)
		if errors.Is(err, errNoMessage) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", stream, err)
		}
		if err := each(m); err != nil {
			return err
		}
		seq = m.seq
	}
}

// storedMsg is one message of a stream, its sequence, and when the server stored it.
type storedMsg struct {
	msg  *nats.Msg
	seq  uint64
	time time.Time
}

func msgGet(ctx context.Context, nc *nats.Conn, stream string, req msgGetRequest) (*storedMsg, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, scanWait)
		defer cancel()
	}
	body, _ := json.Marshal(req)
	reply, err := nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+stream, body)
	if errors.Is(err, nats.ErrNoResponders) {
		return nil, fmt.Errorf("%w: no JetStream answered; is `agentmux up` running on this NATS?", err)
	}
	if err != nil {
		return nil, err
	}
	var resp msgGetResponse
	if err := json.Unmarshal(reply.Data, &resp); err != nil {
		return nil, fmt.Errorf("a message get's answer is not JSON: %w", err)
	}
	switch {
	case resp.Error != nil && resp.Error.Code == 404:
		return nil, errNoMessage
	case resp.Error != nil:
		return nil, fmt.Errorf("message get refused: %d %s", resp.Error.Code, resp.Error.Description)
	case resp.Message == nil:
		return nil, errors.New("a message get's answer holds no message")
	}
	m := &nats.Msg{Subject: resp.Message.Subject, Data: resp.Message.Data}
	if len(resp.Message.Header) > 0 {
		if m.Header, err = nats.DecodeHeadersMsg(resp.Message.Header); err != nil {
			return nil, fmt.Errorf("message %d of %s: %w", resp.Message.Seq, stream, err)
		}
	}
	return &storedMsg{msg: m, seq: resp.Message.Seq, time: resp.Message.Time}, nil
}
