package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/wire"
)

// How long the fleet's nodes are waited for: a change reloads each node's manifest.
const (
	rulesListWait   = 3 * time.Second
	rulesChangeWait = 20 * time.Second
)

// ListRules asks every node for the rules files of the rule supervisors it runs, and
// returns the answers of those that answered within a few seconds: each node keeps its
// own files, so the answers may differ. It waits no longer once every live node has
// answered.
func ListRules(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) ([]*wire.RulesReply, error) {
	live, err := liveNodes(ctx, js, "")
	if err != nil {
		return nil, err
	}
	return gatherRules(ctx, nc, wire.RulesSubject, nil, len(live), rulesListWait)
}

// ChangeRules makes person's change to supervisor's rules file on every live node that
// runs it, and returns each node's answer; a node that did not answer in time is an
// answer with an error. It errs when no live node runs the supervisor.
func ChangeRules(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, supervisor, person string, c *wire.RuleChange) ([]*wire.RulesReply, error) {
	if !wire.IsName(supervisor) || !wire.IsPerson(person) {
		return nil, fmt.Errorf("rules: %q and %q do not name a supervisor and a person", supervisor, person)
	}
	live, err := liveNodes(ctx, js, supervisor)
	if err != nil {
		return nil, err
	}
	if len(live) == 0 {
		return nil, fmt.Errorf("rules: no live node runs supervisor %s", supervisor)
	}
	data, _ := json.Marshal(c)
	replies, err := gatherRules(ctx, nc, wire.RulesChangeSubject(supervisor, person), data, len(live), rulesChangeWait)
	if err != nil {
		return nil, err
	}
	for _, name := range live {
		if !slices.ContainsFunc(replies, func(r *wire.RulesReply) bool { return r.Node == name }) {
			replies = append(replies, &wire.RulesReply{Node: name, Error: fmt.Sprintf("no answer within %s: its rules may not have changed", rulesChangeWait)})
		}
	}
	return replies, nil
}

// liveNodes names the live nodes, those running supervisor when it is not "".
func liveNodes(ctx context.Context, js jetstream.JetStream, supervisor string) ([]string, error) {
	nodes, err := OpenNodes(ctx, js)
	if err != nil {
		return nil, err
	}
	list, now, err := nodes.List(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range list {
		if n.Alive(now) && (supervisor == "" || slices.Contains(n.Supervisors, supervisor)) {
			out = append(out, n.Name)
		}
	}
	return out, nil
}

// gatherRules publishes a request and collects the nodes' answers until want have
// answered or wait has passed.
func gatherRules(ctx context.Context, nc *nats.Conn, subject string, data []byte, want int, wait time.Duration) ([]*wire.RulesReply, error) {
	inbox := nc.NewInbox()
	ch := make(chan *nats.Msg, 64)
	sub, err := nc.ChanSubscribe(inbox, ch)
	if err != nil {
		return nil, fmt.Errorf("rules: %w", err)
	}
	defer sub.Unsubscribe() //nolint:errcheck // the connection may be closing
	if err := nc.PublishRequest(subject, inbox, data); err != nil {
		return nil, fmt.Errorf("rules: ask %s: %w", subject, err)
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	var out []*wire.RulesReply
	for want <= 0 || len(out) < want {
		select {
		case <-ctx.Done():
			return out, ctx.Err()
		case <-timer.C:
			return out, nil
		case m := <-ch:
			if err := bus.CheckReply(m, inbox); err != nil {
				continue
			}
			if m.Header.Get("Status") == "503" {
				return nil, errors.New("rules: no node answered: is `agentmux up` running with this manifest?")
			}
			var r wire.RulesReply
			if err := json.Unmarshal(m.Data, &r); err != nil {
				r = wire.RulesReply{Node: "(a node)", Error: fmt.Sprintf("an answer that is not JSON (%v): %.200q", err, m.Data)}
			}
			out = append(out, &r)
		}
	}
	return out, nil
}
