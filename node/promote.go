package node

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"

	"github.com/agentmux/agentmux/actors/router"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// promoteQueue is the queue group of the nodes taking promotions of shadows: one node
// writes each.
const promoteQueue = "agentmux-promote"

// promoteTimeout bounds the writing of one promotion.
const promoteTimeout = 10 * time.Second

// promotionsAudit is the audit's host and session of a shadow's promotion.
const promotionsAudit = "_policy"

// promotions are the shadows promoted fleet-wide, kept from the bucket until stop; mu
// orders their changes with the router's start.
type promotions struct {
	standing map[string]bool
	mu       sync.Mutex
	stop     context.CancelFunc
}

// watchPromotions keeps the shadows promoted fleet-wide for the node's agents, from
// the promotions bucket, until the node stops, and takes people's promotions
// (wire.ShadowPromoteSubject). It returns once the promotions standing are read: the
// router starts with them.
func (n *Node) watchPromotions() error {
	promotions, err := store.OpenPromotions(context.Background(), n.Bus.JS)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithCancel(context.Background())
	n.promotions.stop = cancel
	err = promotions.Watch(wctx, n.promotionsChanged)
	if err == nil {
		err = n.serveQueue(wire.ShadowPromoteSubjects, promoteQueue, "shadow promotion", func(m *nats.Msg) any {
			reply := n.promote(promotions, m)
			reply.Node = n.Name
			return reply
		})
	}
	if err != nil {
		cancel() // this row does not stop: it did not start
	}
	return err
}

// closePromotions stops the promotions' watch.
func (n *Node) closePromotions() {
	if n.promotions.stop != nil {
		n.promotions.stop()
	}
}

// promotionsChanged takes the promotions standing: the router and its agents route by
// them from their next request, and the log and metrics say what changed.
func (n *Node) promotionsChanged(standing map[string]*wire.Promotion) {
	promoted := make(map[string]bool, len(standing))
	for name := range standing {
		promoted[name] = true
	}
	n.promotions.mu.Lock()
	was := n.promotions.standing
	n.promotions.standing = promoted
	if n.sessions.router != nil {
		n.engine.system.Root.Send(n.sessions.router, &router.Promotions{Promoted: promoted})
	}
	n.promotions.mu.Unlock()
	n.conf.reloads.mu.Lock()
	m := n.conf.opts.Manifest
	n.conf.reloads.mu.Unlock()
	for _, name := range slices.Sorted(maps.Keys(standing)) {
		if was[name] {
			continue
		}
		p := standing[name]
		n.Metrics.Promoted.WithLabelValues(name).Set(1)
		routes := m.Shadowing(name)
		if len(routes) == 0 {
			n.log.Warn("shadow promoted, but no route of this node's manifest shadows it: nothing changes here", "shadow", name, "by", p.By)
			continue
		}
		n.log.Info("shadow promoted: it decides the routes it shadowed", "shadow", name, "by", p.By,
			"at", time.UnixMilli(p.At).UTC().Format(time.RFC3339), "routes", strings.Join(routes, "; "))
	}
	for _, name := range slices.Sorted(maps.Keys(was)) {
		if !promoted[name] {
			n.Metrics.Promoted.WithLabelValues(name).Set(0)
			n.log.Info("shadow demoted: its routes are decided as the manifest says", "shadow", name)
		}
	}
}

// promotedNow is the shadows promoted as of the latest change seen.
func (n *Node) promotedNow() map[string]bool {
	n.promotions.mu.Lock()
	defer n.promotions.mu.Unlock()
	return n.promotions.standing
}

// promote writes the promotion (or demotion) m asks for in the bucket and audits it.
func (n *Node) promote(promotions *store.Promotions, m *nats.Msg) *wire.ShadowPromoteReply {
	shadow, person, ok := wire.ParseShadowPromoteSubject(m.Subject)
	if !ok {
		return &wire.ShadowPromoteReply{Error: "the subject names no shadow and person: " + m.Subject}
	}
	var req wire.ShadowPromote
	if err := json.Unmarshal(m.Data, &req); err != nil {
		return &wire.ShadowPromoteReply{Error: "the promotion is not JSON: " + err.Error()}
	}
	if err := req.Check(); err != nil {
		return &wire.ShadowPromoteReply{Error: err.Error()}
	}
	n.conf.reloads.mu.Lock()
	manifest := n.conf.opts.Manifest
	n.conf.reloads.mu.Unlock()
	routes := manifest.Shadowing(shadow)
	ctx, cancel := context.WithTimeout(context.Background(), promoteTimeout)
	defer cancel()
	now := time.Now()
	by := "human:" + person
	kind, text := wire.AuditShadowPromoted, ""
	var p *wire.Promotion
	if req.Demote {
		was, err := promotions.Demote(ctx, shadow)
		if err != nil {
			return &wire.ShadowPromoteReply{Error: err.Error()}
		}
		p, kind = was, wire.AuditShadowDemoted
		text = fmt.Sprintf("shadow %s demoted by %s (promoted by %s at %s)", shadow, person, was.By, time.UnixMilli(was.At).UTC().Format(time.RFC3339))
	} else {
		if len(routes) == 0 {
			return &wire.ShadowPromoteReply{Error: fmt.Sprintf("no route of node %s's manifest shadows %s: name it as a route's shadow (shadow = %q) and watch it agree first", n.Name, shadow, shadow)}
		}
		p = &wire.Promotion{Shadow: shadow, By: by, At: now.UnixMilli(), Note: req.Note, Agreement: req.Agreement, Decided: req.Decided, SinceMS: req.SinceMS}
		if err := promotions.Promote(ctx, p); err != nil {
			return &wire.ShadowPromoteReply{Error: err.Error()}
		}
		text = fmt.Sprintf("shadow %s promoted by %s, agreeing %.1f%% of %d decisions: %s", shadow, person, 100*req.Agreement, req.Decided, strings.Join(routes, "; "))
	}
	value, _ := json.Marshal(p)
	n.audit.record(wire.AuditID(promotionsAudit, 0, "shadow."+nuid.Next()), &wire.AuditRecord{Time: now.UnixMilli(), Kind: kind,
		Host: promotionsAudit, Session: promotionsAudit, Node: n.Name, Decider: by, Value: value, Reason: req.Note, Text: text})
	n.log.Info(text, "shadow", shadow, "by", person)
	return &wire.ShadowPromoteReply{Promotion: p, Routes: routes}
}
