// Package workspace gives each session of a host a checkout of its own of the host's
// git repository, on a branch of its own, and turns what the session left there into
// its result: the branch, its head, what changed.
//
// A node keeps, per host, a Root on disk:
//
//	<workspace_dir>/<node>/<host>/
//	  records/            the node's own record of each workspace (agents cannot write it)
//	  work/               what the host's agents may write (their sandbox grants it)
//	    mirror.git        a bare copy of the repository, fetched before each session
//	    <session>.<n>/    attempt n's checkout: a git worktree of the mirror, or a clone
//
// The repository itself, a path or a URL, is only read: sessions work in the mirror's
// checkouts, so no agent can write the repository a person works in, its hooks or its
// configuration. Every git command agentmux runs on a workspace or the mirror (which the
// agents may write) starts the way the host's agents start, in their sandbox: a hook or a
// configuration an agent planted there runs with no more than the agent's own rights.
//
//	root, _ := workspace.OpenRoot(dir, log)
//	p := root.Provider(host.Workspace, env, sandbox.Start)
//	ws, err := p.Open(ctx, "s-1", 1)   // ws.Cwd is where the agent starts
//	res := p.Close(ctx, ws, ok)        // branch, head, files changed; removed or kept
package workspace
