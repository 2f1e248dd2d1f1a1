package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/wire"
	"github.com/nats-io/nats.go"
)

// respondQueue is the queue group of the nodes answering `agentmux respond`.
const respondQueue = "agentmux-respond"

// respondTimeout bounds one answer's reads and compare-and-set.
const respondTimeout = 5 * time.Second

// Answer gives a person's answer to the pending request id, as who, through whichever
// node serves agentmux.respond: the reply says whether it was taken, and why not.
func Answer(ctx context.Context, nc *nats.Conn, who, id string, a wire.RespondRequest) (*wire.RespondReply, error) {
	req, _ := json.Marshal(&a)
	msg, err := nc.RequestWithContext(ctx, wire.RespondSubject(who, id), req)
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) {
			err = errors.New("no node answered: is `agentmux up` running with this manifest?")
		}
		return nil, err
	}
	var reply wire.RespondReply
	if err := json.Unmarshal(msg.Data, &reply); err != nil {
		return nil, fmt.Errorf("the node's reply is not JSON: %s", msg.Data)
	}
	return &reply, nil
}

// ServeRespond answers agentmux.respond.<user>.<id> for people answering requests
// waiting for them, until the subscription is drained. The user is the subject's: on
// a bus with users only that user may publish there, so the answer is recorded as
// theirs whatever the message says. Any node serves it; only nodes write the bucket.
// An "answer" to a grant's id revokes the grant (the person's to give, as an answer
// is), and revoked hears of it.
func ServeRespond(nc *nats.Conn, store *PendingStore, revoked func(person string, g *wire.Grant), log *slog.Logger) (*nats.Subscription, error) {
	sub, err := nc.QueueSubscribe(wire.RespondSubjects, respondQueue, func(m *nats.Msg) {
		if err := bus.CheckRequest(m, wire.RespondSubjects); err != nil {
			log.Warn("answer refused", "err", err)
			return
		}
		var reply *wire.RespondReply
		if user, id, ok := wire.ParseRespondSubject(m.Subject); ok && wire.IsGrantID(id) {
			reply = revoke(store, user, id, revoked)
		} else {
			reply = respond(store, m)
		}
		if !reply.OK {
			log.Info("answer refused", "subject", m.Subject, "code", reply.Code, "err", reply.Error)
		}
		data, _ := json.Marshal(reply)
		if err := m.Respond(data); err != nil {
			log.Warn("reply to agentmux respond", "subject", m.Subject, "err", err)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("store: serve %s: %w", wire.RespondSubjects, err)
	}
	return sub, nil
}

func respond(store *PendingStore, m *nats.Msg) *wire.RespondReply {
	user, id, ok := wire.ParseRespondSubject(m.Subject)
	var req wire.RespondRequest
	if !ok {
		return &wire.RespondReply{Code: wire.RespondFailed, Error: "subject " + m.Subject + " is not agentmux.respond.<user>.<id>"}
	}
	if err := json.Unmarshal(m.Data, &req); err != nil || len(req.Value) == 0 {
		return &wire.RespondReply{Code: wire.RespondInvalid, Error: `the request is not {"value": <answer>}`}
	}
	ctx, cancel := context.WithTimeout(context.Background(), respondTimeout)
	defer cancel()
	p, err := store.Respond(ctx, id, user, req)
	if err != nil {
		return refusedAnswer(p, err)
	}
	return &wire.RespondReply{OK: true, Pending: p}
}

// revoke removes grant id, given by person's answer.
func revoke(store *PendingStore, person, id string, revoked func(string, *wire.Grant)) *wire.RespondReply {
	if store.grants == nil {
		return &wire.RespondReply{Code: wire.RespondNoSuch, Error: "this node keeps no grants"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), respondTimeout)
	defer cancel()
	g, err := store.grants.Revoke(ctx, id)
	if err != nil {
		code := wire.RespondFailed
		if errors.Is(err, ErrNoSuchGrant) {
			code = wire.RespondNoSuch
		}
		return &wire.RespondReply{Code: code, Error: err.Error()}
	}
	if revoked != nil {
		revoked(person, g)
	}
	return &wire.RespondReply{OK: true, Grant: g}
}

func refusedAnswer(p *wire.PendingRequest, err error) *wire.RespondReply {
	code := wire.RespondFailed
	switch {
	case errors.Is(err, ErrNoSuchPending):
		code = wire.RespondNoSuch
	case errors.Is(err, ErrInvalidAnswer):
		code = wire.RespondInvalid
	case errors.Is(err, ErrAlreadyAnswered):
		code = wire.RespondAnswered
	case errors.Is(err, ErrPastDeadline):
		code = wire.RespondPastDeadline
	case errors.Is(err, ErrCancelled):
		code = wire.RespondCancelled
	}
	return &wire.RespondReply{Pending: p, Code: code, Error: err.Error()}
}
