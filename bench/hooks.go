package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/agentmux/agentmux/api"
	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/console"
	"github.com/agentmux/agentmux/node"
)

// HooksConfig is the hooks path's scenario: Claude Code sessions agentmux did not
// start, asking through their http hooks (docs/attached.md), in open loop.
type HooksConfig struct {
	Rate     float64       // hooks per second, across the sessions
	Hooks    int           // in all
	Sessions int           // Claude Code sessions the hooks come from, in turn
	Timeout  time.Duration // the whole run
}

// HooksDefaults is 100 hooks a second for 20 seconds from 50 sessions.
func HooksDefaults() HooksConfig {
	return HooksConfig{Rate: 100, Hooks: 2000, Sessions: 50, Timeout: 5 * time.Minute}
}

// HooksReport is what the hooks path measured.
type HooksReport struct {
	Machine Machine     `json:"machine"`
	Config  HooksConfig `json:"config"`
	// Hooks is every PermissionRequest sent; Allowed those the rule allowed (all of
	// them, by the scenario), Failed those that got no decision, with the first errors.
	Hooks   int      `json:"hooks"`
	Allowed int      `json:"allowed"`
	Failed  int      `json:"failed"`
	Errors  []string `json:"errors,omitempty"`
	// Latency is each hook's round trip from its intended send time to the decision.
	Latency Latency `json:"round_trip"`
	Wall    float64 `json:"wall_s"`
	CPU     float64 `json:"cpu_s"` // this process: the node, the console and the hooks' client
	PerCPU  float64 `json:"hooks_per_cpu_s"`
	Load1   float64 `json:"load1"`
	Others  float64 `json:"others_cpu_cores"`
	Busy    bool    `json:"busy,omitempty"`
}

// hooksManifest is a node running an attached Claude Code source whose requests a
// rule allows, as a team's permission rules would, and the API token its hooks bear.
const hooksManifest = `
[attached.load]
dialect = "claude-code"
question_timeout = "10s"
idle_timeout = "1h"
max_sessions = %d

[[api.tokens]]
name = "loadgen"
token_env = "AGENTMUX_LOADGEN_HOOKS"
role = "hook"

[supervisors.policy]
strategy = "rule"
allow = ["Bash(npm test:*)"]

[[routes]]
host = "load"
supervisor = "policy"
`

// RunHooks runs the hooks path: a node and the console's HTTP API in this process, the
// console on loopback, and PermissionRequest hooks posted to /v1/hooks/claude-code on
// the schedule, each session ended by its SessionEnd hook.
func RunHooks(ctx context.Context, hc HooksConfig, log *slog.Logger) (*HooksReport, error) {
	if hc.Rate <= 0 || hc.Hooks <= 0 || hc.Sessions <= 0 {
		return nil, fmt.Errorf("bench: hooks: --rate, --hooks and --sessions must be at least 1")
	}
	if hc.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, hc.Timeout)
		defer cancel()
	}
	m, err := config.Parse("loadgen-hooks.toml", fmt.Appendf(nil, hooksManifest, hc.Sessions+1))
	if err != nil {
		return nil, fmt.Errorf("bench: the hooks manifest: %w", err)
	}
	n, err := node.Start(ctx, node.Options{Manifest: m, Name: "loadgen", Log: log, Ephemeral: true, NoTasks: true, MetricsAddr: "-"})
	if err != nil {
		return nil, err
	}
	defer stopNodes(n)
	secret := newBusUser().Password // 128 bits and more of randomness
	srv, err := console.New(ctx, console.Config{Conn: n.Bus.Conn, JS: n.Bus.JS, Addr: "127.0.0.1:0", Name: "loadgen",
		Tokens: []api.Token{{Name: "loadgen", Role: "hook", Secret: secret}}, Manifest: m, Log: log})
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	c := &hookClient{url: "http://" + ln.Addr().String() + "/v1/hooks/claude-code?source=load", secret: secret,
		http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: hc.Sessions}}}
	// One hook first, so the run does not pay for what the first request sets up.
	if _, err := c.ask(ctx, "warm", 0); err != nil {
		return nil, fmt.Errorf("bench: hooks: the first hook: %w", err)
	}
	return c.run(ctx, hc)
}

// hookClient posts hooks as Claude Code's http hooks do.
type hookClient struct {
	url, secret string
	http        *http.Client
}

// run posts the scenario's hooks on its schedule and ends every session.
func (c *hookClient) run(ctx context.Context, hc HooksConfig) (*HooksReport, error) {
	rep := &HooksReport{Machine: Machine{Cores: runtime.NumCPU(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, GoVersion: runtime.Version()}, Config: hc}
	hist := newHist()
	var mu sync.Mutex
	var wg sync.WaitGroup
	before := readUsage()
	t0 := time.Now()
	for i := range hc.Hooks {
		at := t0.Add(time.Duration(float64(i) / hc.Rate * float64(time.Second)))
		if err := sleepUntil(ctx, at); err != nil {
			return nil, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			allowed, err := c.ask(ctx, "s-"+strconv.Itoa(i%hc.Sessions), i)
			took := time.Since(at)
			mu.Lock()
			defer mu.Unlock()
			rep.Hooks++
			switch {
			case err != nil:
				rep.Failed++
				if len(rep.Errors) < 5 {
					rep.Errors = append(rep.Errors, err.Error())
				}
			case allowed:
				rep.Allowed++
				_ = hist.RecordValue(took.Microseconds())
			default:
				rep.Failed++
				if len(rep.Errors) < 5 {
					rep.Errors = append(rep.Errors, fmt.Sprintf("hook %d was not allowed", i))
				}
			}
		}()
	}
	wg.Wait()
	wall := time.Since(t0)
	u := readUsage().since(before)
	for s := range hc.Sessions {
		if err := c.end(ctx, "s-"+strconv.Itoa(s)); err != nil {
			return nil, fmt.Errorf("bench: hooks: end session s-%d: %w", s, err)
		}
	}
	rep.Latency, rep.Wall, rep.CPU, rep.Load1 = summarize(hist), wall.Seconds(), u.cpu, u.load1
	if u.cpu > 0 {
		rep.PerCPU = float64(rep.Allowed) / u.cpu
	}
	rep.Others, _, rep.Busy = u.neighbours(wall)
	return rep, nil
}

// ask posts hook i of session, a PermissionRequest for `npm test`, and says whether
// it was allowed.
func (c *hookClient) ask(ctx context.Context, session string, i int) (bool, error) {
	body, _ := json.Marshal(map[string]any{"session_id": session, "cwd": "/home/loadgen/proj", "hook_event_name": "PermissionRequest",
		"tool_name": "Bash", "tool_input": map[string]string{"command": "npm test -- --shard " + strconv.Itoa(i)}, "tool_use_id": "toolu_" + strconv.Itoa(i)})
	out, err := c.post(ctx, body)
	if err != nil {
		return false, err
	}
	var v struct {
		Specific struct {
			Decision struct {
				Behavior string `json:"behavior"`
			} `json:"decision"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		return false, fmt.Errorf("the console's answer %.200q: %w", out, err)
	}
	return v.Specific.Decision.Behavior == "allow", nil
}

// end posts session's SessionEnd hook.
func (c *hookClient) end(ctx context.Context, session string) error {
	body, _ := json.Marshal(map[string]any{"session_id": session, "hook_event_name": "SessionEnd", "reason": "exit"})
	_, err := c.post(ctx, body)
	return err
}

func (c *hookClient) post(ctx context.Context, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.secret)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %.200s", resp.Status, out)
	}
	return out, nil
}
