package main

import "io"

// command is one `agentmux <name>`.
type command struct {
	name, summary string
	synopsis      string   // its arguments, after `agentmux <name>`
	examples      []string // whole command lines, with what they do after a '#'
	run           func(args []string, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{"demo", "run 200 scripted agents under supervision on an embedded node", "[--sessions 200]",
			[]string{"agentmux demo", "agentmux demo --sessions 1000"}, demo},
		{"run", "run one session or a pipeline on an embedded node", "-c <manifest> <host> <prompt> | <pipeline> name=value…",
			[]string{`agentmux run -c agentmux.toml worker "add login" --events`, `agentmux run -c agentmux.toml build_and_test spec="a /health endpoint"`}, run},
		{"up", "run a node until SIGINT/SIGTERM; SIGHUP reloads its manifest", "-c <manifest> [--name n] [--no-hosts|--hosts a,b] [--no-supervisors|--supervisors x,y]",
			[]string{"agentmux up -c agentmux.toml", "agentmux up -c agentmux.toml --no-hosts --supervisors oncall,policy   # a supervisor node"}, up},
		{"nodes", "list the fleet's nodes", "-c <manifest> [-o text|wide|json]",
			[]string{"agentmux nodes -c agentmux.toml", "agentmux nodes -c agentmux.toml -o json | jq -r 'select(.state==\"up\") | .name'"}, nodes},
		{"sessions", "list the sessions the fleet's nodes run or have queued, or those that ended", "-c <manifest> [--host h] [--node n] [--state running|queued|ended] [--since 10m] [-o text|wide|json]",
			[]string{"agentmux sessions -c agentmux.toml", "agentmux sessions -c agentmux.toml --host worker --state queued -o wide",
				"agentmux sessions -c agentmux.toml --state ended --since 24h -o wide   # how the day's sessions ended"}, sessions},
		{"tasks", "list what waits in the work queue, and what a node has taken", "-c <manifest> [--host h] [-o text|wide|json]",
			[]string{"agentmux tasks -c agentmux.toml", "agentmux tasks -c agentmux.toml --host worker -o json"}, tasks},
		{"drain", "stop a node taking tasks, hand back the rest", "-c <manifest> <node> [--grace 30s] [--wait]",
			[]string{"agentmux drain -c agentmux.toml node-a --grace 5m --wait"}, drain},
		{"undrain", "make a draining node take tasks again", "-c <manifest> <node>",
			[]string{"agentmux undrain -c agentmux.toml node-a"}, undrain},
		{"submit", "queue a task or a pipeline run", "-c <manifest> <host> <prompt> | <pipeline> name=value… [--id id] [--ttl 1h] [--follow [--timeout 5m]]",
			[]string{`agentmux submit -c agentmux.toml worker "add login" --follow`, `agentmux submit -c agentmux.toml --id t-42 worker "fix the flaky test"`,
				`TRACEPARENT=00-<trace>-<span>-01 agentmux submit -c agentmux.toml worker "fix it"   # its session joins that trace, when the nodes trace`}, submit},
		{"logs", "print a session's events from the history (finished, or -f as they come)", "-c <manifest> <session> [-f] [-o text|wide|json]",
			[]string{"agentmux logs -c agentmux.toml s-4Xk", "agentmux logs -c agentmux.toml -f t-42   # a task just submitted: waits for it, then follows it to its end"}, logs},
		{"interrupt", "ask a running session's agent to stop early", "-c <manifest> <session> [--reason why]",
			[]string{`agentmux interrupt -c agentmux.toml s-4Xk --reason "wrong branch"   # an id's start will do`}, interrupt},
		{"cancel", "end a session for good (not retried), or take a waiting task out of the queue", "-c <manifest> <session|task> [--reason why]",
			[]string{`agentmux cancel -c agentmux.toml s-4Xk --reason "superseded by s-9Qm"`}, cancel},
		{"message", "send a running session's agent a message", "-c <manifest> <session> <text>",
			[]string{`agentmux message -c agentmux.toml s-4Xk "use the staging database"`}, message},
		{"watch", "print live events of all sessions", "-c <manifest> [--subject filter]",
			[]string{"agentmux watch -c agentmux.toml", "agentmux watch -c agentmux.toml --subject 'agentmux.evt.worker.>'"}, watch},
		{"pending", "list requests waiting for a person", "-c <manifest> [-o text|wide|json]",
			[]string{"agentmux pending -c agentmux.toml", "agentmux pending -c agentmux.toml -o wide"}, pending},
		{"respond", "answer a waiting request", "-c <manifest> <id> <answer> [--reason why] [--session|--host] [--as name]",
			[]string{"agentmux respond -c agentmux.toml h-7Yq yes", `agentmux respond -c agentmux.toml h-7Yq no --reason "prod freeze"`, `agentmux respond -c agentmux.toml h-7Yq "yes for session"`}, respond},
		{"grants", "list the answers standing for a session or a host, or revoke one", "[list] -c <manifest> [-o text|wide|json] | revoke -c <manifest> <id> [--as name]",
			[]string{"agentmux grants -c agentmux.toml", "agentmux grants revoke -c agentmux.toml g-h-7Yq   # its requests are asked again"}, grantsCommand},
		{"spend", "list what each host's sessions cost each day, fleet-wide, as their agents reported it", "-c <manifest> [--days n] [--host h] [-o text|wide|json]",
			[]string{"agentmux spend -c agentmux.toml", "agentmux spend -c agentmux.toml --days 30 --host coder -o wide"}, spend},
		{"budget", "list each host's daily budget today, fleet-wide, or raise one", "[list] -c <manifest> [-o text|wide|json] | raise -c <manifest> --host h --usd n [--note why] [--as name]",
			[]string{"agentmux budget -c agentmux.toml", `agentmux budget raise -c agentmux.toml --host coder --usd 50 --note "release day"   # its waiting tasks run`}, budgetCommand},
		{"rules", "list the rule supervisors' rules files across the fleet, or change one on every node that runs it", "[list] -c <manifest> [-o text|wide|json] | allow|ask|deny|remove -c <manifest> --supervisor s [--verdict v] [--note why] [--as name] <rule>…",
			[]string{"agentmux rules -c agentmux.toml", `agentmux rules allow -c agentmux.toml --supervisor policy "Bash(npm test:*)"   # each node writes it and reloads`,
				`agentmux rules remove -c agentmux.toml --supervisor policy --verdict allow "Bash(npm test:*)"`}, rulesCommand},
		{"audit", "print a session's trail, or search the audit across sessions", "-c <manifest> [<session>] [--host h] [--kind k] [--type t] [--decider d] [--user u] [--since 24h] [--until t] [-o text|wide|json|csv]",
			[]string{"agentmux audit -c agentmux.toml s-4Xk", "agentmux audit -c agentmux.toml s-4Xk -o json | jq 'select(.kind==\"answer\")'",
				"agentmux audit -c agentmux.toml --decider human --type approval --since 168h -o csv > approvals.csv   # who approved what, last week"}, audit},
		{"console", "serve the web console people answer from", "-c <manifest> [--addr 127.0.0.1:9470]",
			[]string{"agentmux console -c agentmux.toml --as ana"}, consoleCommand},
		{"hook", "be an agent's hook that asks agentmux (Claude Code, Codex), or write the hooks into its settings", "claude-code|codex [--url URL] [--source s] | install claude-code [--settings file] [--url URL] [--source s] [--events e,…] [--command] | install codex [--hooks file] [--url URL] [--source s] [--events e,…] [--trust]",
			[]string{"agentmux hook install claude-code --url http://127.0.0.1:9470 --source laptops   # every Claude Code of this user asks the fleet",
				"agentmux hook install claude-code --settings .claude/settings.json --command   # a command hook, for this project",
				"agentmux hook install codex --url http://127.0.0.1:9470 --source desks --trust   # every Codex of this user, trusted in Codex",
				"echo \"$HOOK_INPUT\" | AGENTMUX_API_TOKEN=… agentmux hook claude-code --source laptops"}, hookCommand},
		{"mcp", "serve agentmux's MCP tools over stdio: approve (Claude Code's --permission-prompt-tool) and ask", "[--url URL] [--source s] [--unreachable deny|ask]",
			[]string{"agentmux mcp --url http://127.0.0.1:9470 --source laptops   # as Claude Code's MCP server, with --permission-prompt-tool mcp__agentmux__approve (docs/attached.md)"}, mcpCommand},
		{"workspace", "list, show, diff and clean the workspaces of sessions (hosts with workspace = worktree or clone)", "[list] -c <manifest> [--host h] [--node n] [-o text|wide|json] | show <session> | diff <session> [--attempt n] [--stat] | clean [--session s] [--host h] [--node n]",
			[]string{"agentmux workspace list -c agentmux.toml -o wide", "agentmux workspace diff -c agentmux.toml s-4Xk | git apply   # bring a session's work into this checkout",
				"agentmux workspace clean -c agentmux.toml --host coder   # remove the workspaces kept after failures"}, workspaceCommand},
		{"validate", "check a manifest", "-c <manifest>",
			[]string{"agentmux validate -c agentmux.toml && systemctl reload agentmux"}, validate},
		{"nats-auth", "print an external NATS server's users for the manifest", "-c <manifest> [--helm]",
			[]string{"agentmux nats-auth -c agentmux.toml > nats-auth.conf"}, natsAuth},
		{"health", "exit 0 if the node on this machine is ready", "-c <manifest> [--addr host:port]",
			[]string{"agentmux health -c /etc/agentmux/agentmux.toml"}, health},
		{"completion", "print a shell's completion script for agentmux", "bash|zsh|fish",
			[]string{"source <(agentmux completion bash)", "agentmux completion zsh > \"${fpath[1]}/_agentmux\"", "agentmux completion fish > ~/.config/fish/completions/agentmux.fish"}, completion},
		{"sim", "be the scripted agent (used by demo, tests and loadgen)", "", nil, simCommand},
		{"version", "print this binary's version and the revision it was built from", "", []string{"agentmux version", "agentmux version   # also: agentmux --version"}, version},
	}
}
