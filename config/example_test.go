package config_test

import (
	"fmt"

	"github.com/agentmux/agentmux/config"
)

// A manifest with a problem is refused with where it is and what to write instead.
func ExampleParse() {
	_, err := config.Parse("agentmux.toml", []byte("[hosts.worker]\ncommand = \"python3\"\ntimeout = \"10x\"\n"))
	fmt.Println(err)
	// Output:
	// config: hosts.worker.timeout (agentmux.toml:3:1): "10x" is not a duration; use seconds or "90s"
}

// The first route whose type, host and pattern fit a request sends it to its supervisor.
func ExampleRoutes_Match() {
	m, err := config.Parse("agentmux.toml", []byte(`
[hosts.worker]
command = "python3"
[supervisors.security]
strategy = "static"
answers = { approval = "no" }
[supervisors.default]
strategy = "static"
answers = { question = "Proceed", approval = "yes" }
[[routes]]
type = "approval"
match = "(?i)rm -rf"
supervisor = "security"
[[routes]]
supervisor = "default"
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, text := range []string{"rm -rf build", "npm test"} {
		fmt.Printf("approval %q → %s\n", text, m.Routes.Match("worker", "approval", text, false).Supervisor)
	}
	// Output:
	// approval "rm -rf build" → security
	// approval "npm test" → default
}
