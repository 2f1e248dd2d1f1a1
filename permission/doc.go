// Package permission evaluates tool permissions written as Claude Code writes them in
// a project's settings ("permissions": {"allow", "ask", "deny"}): "Bash(npm run test:*)",
// "Read(./src/**)", "Edit(//etc/**)", "WebFetch(domain:example.com)", "mcp__github",
// "mcp__github__create_issue". Deny rules are checked first, then ask, then allow.
//
// An approval is mapped to the tool call it asks for (Call) from what each dialect
// sends: Claude Code's tool and input; Codex's command ("Run: …", as Bash) and file
// changes (as Edit, without paths); an ACP agent's tool kind (execute as Bash, read as
// Read, edit, delete and move as Edit, fetch as WebFetch) and raw input. A native agent
// may send "tool" and "input" in Claude Code's shape.
//
// A shell line is judged by everything it can run and write (shell.go): its commands
// wherever they sit, past wrappers whose every option is modelled (wrappers.go), through
// programs' own options (programs.go: find -exec, sort -o, tee), with the variables it
// sets (variables.go) and the expansions bash re-evaluates (expansion.go). The reading
// fails closed: what it does not model is asked, never allowed. A test runs every line of
// a generated corpus that the rules allow in real bash under strace and fails on anything
// run or written that they do not allow.
//
// A rules file (File) keeps more rules beside a manifest, with who added each and why:
// ReadFile reads one, UpdateFile changes one under a lock that other processes take
// too. Propose names the narrowest rules that cover a call beyond itself, for a person
// to edit and save ("always for this rule").
package permission
