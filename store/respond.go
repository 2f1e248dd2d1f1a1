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

// respondQueue and revokeQueue are the queue groups of the nodes taking people's
// answers and revocations.
const (
	respondQueue = "agentmux-respond"
	revokeQueue  = "agentmux-revoke"
)

// respondTimeout bounds one answer's reads and compare-and-set.
const respondTimeout = 5 * time.Second

// Answer gives a person's answer to the pending request id, as who, through whichever
// node serves agentmux.respond: the reply says whether it was taken, and why not.
func Answer(ctx context.Context, nc *nats.Conn, who, id string, a wire.RespondRequest) (*wire.RespondReply, error) {
	req, _ := json.Marshal(&a)
	return personsAct(ctx, nc, wire.RespondSubject(who, id), req)
}

// Revoke revokes grant id as who, through whichever node serves agentmux.revoke: the
// reply holds the grant revoked, or says why not.
func Revoke(ctx context.Context, nc *nats.Conn, who, id string) (*wire.RespondReply, error) {
	return personsAct(ctx, nc, wire.RevokeSubject(who, id), nil)
}

// personsAct sends a person's answer or revocation on subject and reads the reply.
func personsAct(ctx context.Context, nc *nats.Conn, subject string, req []byte) (*wire.RespondReply, error) {
	msg, err := nc.RequestWithContext(ctx, subject, req)
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
func ServeRespond(nc *nats.Conn, store *PendingStore, log *slog.Logger) (*nats.Subscription, error) {
	return serveQueue(nc, wire.RespondSubjects, respondQueue, "answer", log, func(m *nats.Msg) *wire.RespondReply { return respond(store, m) })
}

// ServeRevoke answers agentmux.revoke.<user>.<grant id> for people revoking what they
// or another person gave for a session or a host, until the subscription is drained;
// revoked hears of each. As for an answer, the person is the subject's user.
func ServeRevoke(nc *nats.Conn, grants *Grants, revoked func(person string, g *wire.Grant), log *slog.Logger) (*nats.Subscription, error) {
	return serveQueue(nc, wire.RevokeSubjects, revokeQueue, "revocation", log, func(m *nats.Msg) *wire.RespondReply {
		user, id, ok := wire.ParseRevokeSubject(m.Subject)
		if !ok || !wire.IsGrantID(id) {
			return &wire.RespondReply{Code: wire.RespondNoSuch, Error: "subject " + m.Subject + " is not agentmux.revoke.<user>.<grant id>"}
		}
		return revoke(grants, user, id, revoked)
	})
}

// serveQueue serves a person's act on subjects in queue, replying what act says.
func serveQueue(nc *nats.Conn, subjects, queue, what string, log *slog.Logger, act func(*nats.Msg) *wire.RespondReply) (*nats.Subscription, error) {
	sub, err := nc.QueueSubscribe(subjects, queue, func(m *nats.Msg) {
		if err := bus.CheckRequest(m, subjects); err != nil {
			log.Warn(what+" refused", "err", err)
			return
		}
		reply := act(m)
		if !reply.OK {
			log.Info(what+" refused", "subject", m.Subject, "code", reply.Code, "err", reply.Error)
		}
		data, _ := json.Marshal(reply)
		if err := m.Respond(data); err != nil {
			log.Warn("reply to a person's "+what, "subject", m.Subject, "err", err)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("store: serve %s: %w", subjects, err)
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

// revoke removes grant id, revoked by person.
func revoke(grants *Grants, person, id string, revoked func(string, *wire.Grant)) *wire.RespondReply {
	if grants == nil {
		return &wire.RespondReply{Code: wire.RespondNoSuch, Error: "this node keeps no grants"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), respondTimeout)
	defer cancel()
	g, err := grants.Revoke(ctx, id)
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
