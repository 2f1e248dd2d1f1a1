package metrics

import "github.com/prometheus/client_golang/prometheus"

// WorkspaceMetrics are the metric families of sessions' workspaces (hosts with
// workspace = "worktree" or "clone").
type WorkspaceMetrics struct {
	WorkspaceBytes *prometheus.GaugeVec   // host
	WorkspaceOver  *prometheus.CounterVec // host
	// WorkspaceConflicts counts, on the node of the session that touched them last,
	// the files two live sessions on one repository both touched.
	WorkspaceConflicts *prometheus.CounterVec // host
}

func newWorkspaceMetrics(f *families) WorkspaceMetrics {
	return WorkspaceMetrics{
		WorkspaceBytes:     f.gauge("workspace_bytes", "Bytes the host's open workspaces on this node hold, as last measured (every few seconds and at each request).", "host"),
		WorkspaceOver:      f.counter("workspace_over_cap_total", "Sessions stopped because their workspace grew over max_workspace_bytes.", "host"),
		WorkspaceConflicts: f.counter("workspace_conflicts_total", "Conflicts the radar found: a session touched files another live session on the same repository touched (counted by the node of the one that touched them last).", "host"),
	}
}
