package node

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nuid"

	"github.com/nats-io/nats.go"

	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// standing is the fleet's grants, people's answers for a session or a host, kept
// from the bucket until stop.
type standing struct {
	grants *store.Grants
	stop   context.CancelFunc
}

// grantsQueue is the queue group every node answers GrantsSubject in.
const grantsQueue = "agentmux-grants"

// openGrants keeps the fleet's grants (answers people gave for a session or a host)
// for this node's agents, lists them to whoever may read (GrantsSubject), and takes
// people's revocations (RevokeSubjects), until the node stops.
func (n *Node) openGrants() error {
	wctx, cancel := context.WithCancel(context.Background())
	grants, err := store.OpenGrants(wctx, n.Bus.JS)
	if err != nil {
		cancel()
		return err
	}
	n.standing.grants, n.standing.stop = grants, cancel
	err = n.serveQueue(wire.GrantsSubject, grantsQueue, "grants request", func(*nats.Msg) any {
		return &wire.GrantsReply{Grants: grants.Standing(time.Now())}
	})
	if err == nil {
		var sub *nats.Subscription
		if sub, err = store.ServeRevoke(n.Bus.Conn, grants, n.grantRevoked, n.log); err == nil {
			n.control.subs = append(n.control.subs, sub)
		}
	}
	if err != nil {
		cancel() // this row does not stop: it did not start
	}
	return err
}

// closeGrants stops keeping the grants' index.
func (n *Node) closeGrants() {
	if n.standing.stop != nil {
		n.standing.stop()
	}
}

// grantRevoked audits a grant's revocation, on the session it was given in.
func (n *Node) grantRevoked(person string, g *wire.Grant) {
	n.log.Info("grant revoked", "grant", g.ID, "by", person, "scope", g.Scope, "host", g.Host)
	n.audit.record(wire.AuditID(g.Session, 0, g.ID+".revoked."+nuid.Next()), &wire.AuditRecord{Time: time.Now().UnixMilli(), Kind: wire.AuditGrantRevoked, Session: g.Session, Host: g.Host, Node: n.Name,
		Request: g.Request, Type: g.Type, Text: g.Text, Value: g.Value, Decider: "human:" + person, Scope: g.Scope,
		Reason: fmt.Sprintf("revoked %s's answer for the %s (%s)", g.By, g.Scope, g.ID)})
}
