package node

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/nats-io/nats.go"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/wire"
	"github.com/agentmux/agentmux/workspace"
)

// watchConflicts feeds the node's conflict radar with every node's workspace touches
// and session ends, when it runs a host with workspaces. Of each conflict the radar
// finds, the node whose session touched the files last publishes the workspace.conflict
// event and counts it: every node's radar finds it, one node tells of it.
func (n *Node) watchConflicts() error {
	if !slices.ContainsFunc(slices.Collect(maps.Values(n.conf.roles.hosts)), func(h *config.Host) bool { return h.Workspace.Isolated() }) {
		return nil
	}
	radar := workspace.NewRadar()
	touched := wire.EventSubject("*", "*", wire.EventWorkspaceTouched)
	sub, err := n.Bus.Conn.Subscribe(touched, func(m *nats.Msg) {
		if bus.CheckEvent(m, touched) != nil {
			return
		}
		var t wire.WorkspaceTouch
		if err := json.Unmarshal(m.Data, &t); err != nil {
			n.log.Warn("a workspace.touched event is not one; the conflict radar skips it", "subject", m.Subject, "err", err)
			return
		}
		for _, c := range radar.Note(&t) {
			n.conflict(&t, c)
		}
	})
	if err != nil {
		return err
	}
	n.control.subs = append(n.control.subs, sub)
	ended := wire.EventSubject("*", "*", wire.EventSessionEnded)
	sub, err = n.Bus.Conn.Subscribe(ended, func(m *nats.Msg) {
		if _, session, _, ok := wire.ParseEventSubject(m.Subject); ok && bus.CheckEvent(m, ended) == nil {
			radar.Ended(session)
		}
	})
	if err != nil {
		return err
	}
	n.control.subs = append(n.control.subs, sub)
	n.workspaces.radar = radar
	return nil
}

// conflict publishes the conflict between touch t and c, another session's touch of
// the same files, when this node's session touched them last.
func (n *Node) conflict(t *wire.WorkspaceTouch, c wire.WorkspaceConflict) {
	ev := &wire.ConflictEvent{Repo: t.Repo, Session: t.Session, Host: t.Host, Branch: t.Branch, With: c}
	if c.Time > t.Time || c.Time == t.Time && c.Session > t.Session { // the other was last
		ev = &wire.ConflictEvent{Repo: t.Repo, Session: c.Session, Host: c.Host, Branch: c.Branch,
			With: wire.WorkspaceConflict{Paths: c.Paths, Session: t.Session, Host: t.Host, Node: t.Node, Branch: t.Branch, Kind: t.Kind, Time: t.Time}}
		if c.Node != n.Name {
			return
		}
	} else if t.Node != n.Name {
		return
	}
	n.Metrics.WorkspaceConflicts.WithLabelValues(ev.Host).Inc()
	n.log.Info("two sessions touch the same files", "session", ev.Session, "other", ev.With.Session, "paths", ev.With.Paths)
	data, _ := json.Marshal(ev)
	if err := bus.PublishEvent(n.Bus.Conn, ev.Host, ev.Session, wire.EventWorkspaceConflict, data); err != nil {
		n.Metrics.PublishErrors.WithLabelValues("event").Inc()
	}
}
