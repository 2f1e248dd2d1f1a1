package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
)

// respondQueue is the queue group of the nodes answering `runtime respond`.
const respondQueue = "agentmux-respond"

// respondTimeout bounds one answer's reads and compare-and-set.
const respondTimeout = 5 * time.Second

// RespondRequest is what `runtime respond` sends on agentmux.respond.<user>.<id>.
type RespondRequest struct {
	Value  json.RawMessage `json:"value"`
	Reason string          `json:"reason,omitempty"` // why, for the agent and the audit (a deny's reason)
	Scope  string          `json:"scope,omitempty"`  // "session": it stands for the same request later in the session
}

// Codes of a refused RespondReply.
const (
	RespondNoSuch       = "no_such_request"
	RespondInvalid      = "invalid_answer"
	RespondAnswered     = "already_answered"
	RespondPastDeadline = "past_deadline"
	RespondCancelled    = "cancelled"
	RespondFailed       = "failed"
)

// RespondReply says whether the answer was taken; Code and Error say why not.
type RespondReply struct {
	OK      bool            `json:"ok"`
	Pending *PendingRequest `json:"pending,omitempty"`
	Code    string          `json:"code,omitempty"`
	Error   string          `json:"error,omitempty"`
}

// Answer gives a person's answer to the pending request id, as who, through whichever
// node serves agentmux.respond: the reply says whether it was taken, and why not.
func Answer(ctx context.Context, nc *nats.Conn, who, id string, a RespondRequest) (*RespondReply, error) {
	req, _ := json.Marshal(&a)
	msg, err := nc.RequestWithContext(ctx, RespondSubject(who, id), req)
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) {
			err = errors.New("no node answered: is `runtime up` running with this manifest?")
		}
		return nil, err
	}
	var reply RespondReply
	if err := json.Unmarshal(msg.Data, &reply); err != nil {
		return nil, fmt.Errorf("the node's reply is not JSON: %s", msg.Data)
	}
	return &reply, nil
}

// ServeRespond answers agentmux.respond.<user>.<id> for people answering requests
// waiting for them, until the subscription is drained. The user is the subject's: on
// a bus with users only that user may publish there, so the answer is recorded as
// theirs whatever the message says. Any node serves it; only nodes write the bucket.
func ServeRespond(nc *nats.Conn, store *PendingStore, log *slog.Logger) (*nats.Subscription, error) {
	sub, err := nc.QueueSubscribe(RespondSubjects, respondQueue, func(m *nats.Msg) {
		if err := CheckRequest(m, RespondSubjects); err != nil {
			log.Warn("answer refused", "err", err)
			return
		}
		reply := respond(store, m)
		if !reply.OK {
			log.Info("answer refused", "subject", m.Subject, "code", reply.Code, "err", reply.Error)
		}
		data, _ := json.Marshal(reply)
		if err := m.Respond(data); err != nil {
			log.Warn("reply to runtime respond", "subject", m.Subject, "err", err)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("bus: serve %s: %w", RespondSubjects, err)
	}
	return sub, nil
}

func respond(store *PendingStore, m *nats.Msg) *RespondReply {
	user, id, ok := ParseRespondSubject(m.Subject)
	var req RespondRequest
	if !ok {
		return &RespondReply{Code: RespondFailed, Error: "subject " + m.Subject + " is not agentmux.respond.<user>.<id>"}
	}
	if err := json.Unmarshal(m.Data, &req); err != nil || len(req.Value) == 0 {
		return &RespondReply{Code: RespondInvalid, Error: `the request is not {"value": <answer>}`}
	}
	ctx, cancel := context.WithTimeout(context.Background(), respondTimeout)
	defer cancel()
	p, err := store.Respond(ctx, id, user, req)
	if err != nil {
		return refusedAnswer(p, err)
	}
	return &RespondReply{OK: true, Pending: p}
}

func refusedAnswer(p *PendingRequest, err error) *RespondReply {
	code := RespondFailed
	switch {
	case errors.Is(err, ErrNoSuchPending):
		code = RespondNoSuch
	case errors.Is(err, ErrInvalidAnswer):
		code = RespondInvalid
	case errors.Is(err, ErrAlreadyAnswered):
		code = RespondAnswered
	case errors.Is(err, ErrPastDeadline):
		code = RespondPastDeadline
	case errors.Is(err, ErrCancelled):
		code = RespondCancelled
	}
	return &RespondReply{Pending: p, Code: code, Error: err.Error()}
}
