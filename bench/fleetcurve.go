package bench

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/sim"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// Shape is one fleet: agent nodes (the load agents, in process) and supervisor nodes.
type Shape struct {
	Agents      int `json:"agent_nodes"`
	Supervisors int `json:"supervisor_nodes"`
}

func (s Shape) String() string { return fmt.Sprintf("%dx%d", s.Agents, s.Supervisors) }

// ParseShapes reads "1x1,1x2,4x2": agent nodes x supervisor nodes.
func ParseShapes(s string) ([]Shape, error) {
	var out []Shape
	for _, f := range strings.Split(s, ",") {
		a, sup, ok := strings.Cut(strings.TrimSpace(f), "x")
		na, err1 := strconv.Atoi(a)
		ns, err2 := strconv.Atoi(sup)
		if !ok || err1 != nil || err2 != nil || na < 1 || ns < 1 {
			return nil, fmt.Errorf("bench: fleet shape %q: want <agent nodes>x<supervisor nodes>, e.g. 2x1", f)
		}
		out = append(out, Shape{na, ns})
	}
	return out, nil
}

// FleetPoint is what the scenario did on one fleet shape.
type FleetPoint struct {
	Shape
	System *System `json:"system"`
	// CPU seconds over the run: the agent nodes' (with their in-process agents), the
	// supervisor nodes', and the loadgen process's (the NATS server, the submitter).
	AgentCPU      float64 `json:"agent_nodes_cpu_s"`
	SupervisorCPU float64 `json:"supervisor_nodes_cpu_s"`
	ServerCPU     float64 `json:"server_cpu_s"`
	// Sessions is how many sessions each agent node ran.
	Sessions map[string]int `json:"sessions_by_node"`
}

// FleetReport is the scaling curve: the scenario on each fleet shape in turn.
type FleetReport struct {
	Machine Machine       `json:"machine"`
	Config  ConfigEcho    `json:"config"`
	Points  []*FleetPoint `json:"points"`
}

// RunFleetCurve runs the scenario on each fleet shape: a NATS server in this process,
// and every node a process of its own (c.NodeCommand), agents on the agent nodes and
// the supervisors on the others; sessions are tasks on the work queue, taken by the
// agent nodes as they have room, their results read from session.ended events.
func RunFleetCurve(ctx context.Context, c Config, shapes []Shape, log *slog.Logger, progress Progress) (*FleetReport, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if len(c.NodeCommand) == 0 {
		return nil, fmt.Errorf("bench: the fleet curve needs the command that runs a node")
	}
	rep := &FleetReport{Machine: Machine{Cores: runtime.NumCPU(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, GoVersion: runtime.Version()},
		Config: ConfigEcho{Sessions: c.Sessions, Rate: c.Rate, Progress: c.Progress, ProgressRate: c.ProgressRate, Questions: c.Questions,
			Approvals: c.Approvals, Unrouted: c.Unrouted, ThinkMS: ms(c.Think.Microseconds()), QuestionTimeout: ms(c.QuestionTimeout.Microseconds()),
			Agent: AgentInProc}}
	for i, sh := range shapes {
		if i > 0 {
			if err := Settle(ctx); err != nil {
				return nil, err
			}
		}
		p, err := runShape(ctx, &c, sh, log, progress)
		if err != nil {
			return nil, fmt.Errorf("bench: fleet %s: %w", sh, err)
		}
		rep.Points = append(rep.Points, p)
	}
	return rep, nil
}

// fleetManifest is the scenario's manifest for nodes on url, pool processes per agent
// node.
func (c *Config) fleetManifest(url string, pool int) string {
	return fmt.Sprintf("[nats]\nurl = %q\n\n[hosts.load]\ncommand = \"inproc\"\npool = %d\nquestion_timeout = %q\nstop_grace = \"2s\"\n",
		url, pool, c.QuestionTimeout.String()) + loadSupervisors
}

func runShape(ctx context.Context, c *Config, sh Shape, log *slog.Logger, progress Progress) (*FleetPoint, error) {
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	name := fmt.Sprintf("fleet-%s", sh)
	f, err := startShape(ctx, c, sh, name, log)
	if f != nil {
		defer f.close()
	}
	if err != nil {
		return nil, err
	}
	ended := make(chan *wire.SessionEnded, c.Sessions)
	sub, err := f.bus.Conn.Subscribe(wire.EventSubject(loadHost, "*", "session.ended"), func(m *nats.Msg) {
		var e wire.SessionEnded
		if json.Unmarshal(m.Data, &e) == nil {
			ended <- &e
		}
	})
	if err != nil {
		return nil, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		return nil, err
	}
	if err := f.bus.Conn.Flush(); err != nil {
		return nil, err
	}
	cpuBefore := nodeCPU(f.nodes)
	before := readUsage()
	t0 := time.Now()
	col := newCollector(name)
	reports, byNode, err := f.drive(ctx, c, name, col, ended, progress)
	if err != nil {
		return nil, err
	}
	wall := time.Since(t0)
	cpuAfter := nodeCPU(f.nodes)
	sys := col.system(wall, readUsage().since(before))
	sys.PeakConcurrent = peakConcurrent(reports)
	p := &FleetPoint{Shape: sh, System: sys, ServerCPU: sys.CPU, Sessions: byNode}
	for i, n := range f.nodes {
		if n.role == RoleAgents {
			p.AgentCPU += cpuAfter[i] - cpuBefore[i]
		} else {
			p.SupervisorCPU += cpuAfter[i] - cpuBefore[i]
		}
	}
	sys.CPU = p.AgentCPU + p.SupervisorCPU + p.ServerCPU
	if sys.CPU > 0 {
		sys.QPSPerCore = float64(sys.Requests) / sys.CPU
	}
	sys.HarnessCPU, sys.QPSPerHarness = 0, 0
	return p, nil
}

// shapeFleet is one shape's fleet: a bus of its own, and its nodes.
type shapeFleet struct {
	dir   string
	bus   *bus.Bus
	nodes []*fleetNode
}

// startShape starts sh's fleet and waits for each node to be ready; on an error, the
// fleet returned holds what started, for close.
func startShape(ctx context.Context, c *Config, sh Shape, name string, log *slog.Logger) (*shapeFleet, error) {
	dir, err := os.MkdirTemp("", "agentmux-loadgen-curve-")
	if err != nil {
		return nil, err
	}
	f := &shapeFleet{dir: dir}
	u := newBusUser()
	if f.bus, err = bus.Open(bus.Config{Listen: "127.0.0.1:0", StoreDir: filepath.Join(dir, "store"), Name: "loadgen-fleet", Users: []bus.User{u.User}}, log); err != nil {
		return f, err
	}
	if _, err := store.Declare(ctx, f.bus.JS, 0, store.Keep{}, log); err != nil {
		return f, err
	}
	manifest := filepath.Join(dir, "agentmux.toml")
	pool := (c.Sessions+sh.Agents-1)/sh.Agents + 8
	if err := os.WriteFile(manifest, []byte(c.fleetManifest(f.bus.ClientURL(), pool)), 0o600); err != nil {
		return f, err
	}
	for i := range sh.Agents + sh.Supervisors {
		role := RoleAgents
		if i >= sh.Agents {
			role = RoleSupervisors
		}
		n, err := startFleetNode(c, manifest, fmt.Sprintf("%s-%s-%d", name, role, i), role, u)
		if err != nil {
			return f, err
		}
		f.nodes = append(f.nodes, n)
	}
	for _, n := range f.nodes {
		if err := n.waitReady(ctx); err != nil {
			return f, err
		}
	}
	return f, nil
}

// close stops the fleet's nodes, then its bus, and removes its directory.
func (f *shapeFleet) close() {
	stopFleetNodes(f.nodes)
	if f.bus != nil {
		f.bus.Close()
	}
	_ = os.RemoveAll(f.dir)
}

// drive submits c's sessions at their arrival times and collects each as it ends: the
// load reports, and how many sessions each node ran.
func (f *shapeFleet) drive(ctx context.Context, c *Config, name string, col *collector, ended <-chan *wire.SessionEnded, progress Progress) ([]*sim.LoadReport, map[string]int, error) {
	prompt := c.plan().Prompt()
	var reports []*sim.LoadReport
	byNode := map[string]int{}
	submitted, timer := 0, time.NewTimer(0)
	defer timer.Stop()
	t0 := time.Now()
	for col.sessions < c.Sessions {
		due, now := c.nextArrival(t0, submitted, timer)
		if now {
			id := fmt.Sprintf("%s-%d", name, submitted)
			data, _ := json.Marshal(&wire.Task{ID: id, Host: loadHost, Prompt: prompt})
			if _, err := f.bus.JS.PublishAsync(wire.TaskSubject(loadHost), data, jetstream.WithMsgID(id)); err != nil {
				return nil, nil, fmt.Errorf("submit: %w", err)
			}
			submitted++
			continue
		}
		select {
		case <-due:
		case e := <-ended:
			byNode[e.Node]++
			if r := loadReport(col, e); r != nil {
				reports = append(reports, r)
			}
			progress(name, col.sessions, c.Sessions)
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("%d of %d sessions ended before the timeout: %w", col.sessions, c.Sessions, ctx.Err())
		}
	}
	return reports, byNode, nil
}

// loadReport adds a session.ended event's result to col, and returns its load report.
func loadReport(col *collector, e *wire.SessionEnded) *sim.LoadReport {
	if e.Outcome != "ok" {
		col.fail(e.Error)
		return nil
	}
	var p struct {
		Load *sim.LoadReport `json:"load"`
	}
	if err := json.Unmarshal(e.Result, &p); err != nil || p.Load == nil {
		col.fail(fmt.Sprintf("result without a load report: %.200s", e.Result))
		return nil
	}
	p.Load.ReceivedNS = time.Now().UnixNano()
	col.add(p.Load)
	return p.Load
}

// peakConcurrent is the most sessions that ran at the same time, from their start and
// end times (one clock: every node runs on this machine).
func peakConcurrent(reports []*sim.LoadReport) int {
	type edge struct {
		at    int64
		delta int
	}
	var edges []edge
	for _, r := range reports {
		edges = append(edges, edge{r.StartNS, 1}, edge{r.EndNS, -1})
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		return cmp.Compare(a.delta, b.delta) // an end before a start at the same instant
	})
	peak, now := 0, 0
	for _, e := range edges {
		now += e.delta
		peak = max(peak, now)
	}
	return peak
}

// fleetNode is one node process of the fleet.
type fleetNode struct {
	role   string
	cmd    *exec.Cmd
	ready  chan error
	stderr *syncBuffer
}

func startFleetNode(c *Config, manifest, name, role string, u busUser) (*fleetNode, error) {
	args := append(append([]string(nil), c.NodeCommand[1:]...), "-c", manifest, "--name", name, "--role", role)
	cmd := exec.Command(c.NodeCommand[0], args...)
	cmd.Env = append(agentEnv(c), u.env()...) // the node connects as u (its manifest has a url)
	n := &fleetNode{role: role, cmd: cmd, ready: make(chan error, 1), stderr: &syncBuffer{}}
	cmd.Stderr = n.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start node %s: %w", name, err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "ready" {
				n.ready <- nil
				_, _ = io.Copy(io.Discard, out)
				return
			}
		}
		n.ready <- fmt.Errorf("node %s ended before it was ready: %s", name, n.stderr.String())
	}()
	return n, nil
}

func (n *fleetNode) waitReady(ctx context.Context) error {
	select {
	case err := <-n.ready:
		return err
	case <-time.After(time.Minute):
		return fmt.Errorf("a node not ready within a minute: %s", n.stderr.String())
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stopFleetNodes stops every node (SIGTERM, then SIGKILL after a minute) and waits.
func stopFleetNodes(nodes []*fleetNode) {
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = n.cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() {
				_ = n.cmd.Wait()
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(time.Minute):
				_ = n.cmd.Process.Kill()
				<-done
			}
		}()
	}
	wg.Wait()
}

// nodeCPU reads each node process's CPU seconds so far, from /proc.
func nodeCPU(nodes []*fleetNode) []float64 {
	out := make([]float64, len(nodes))
	for i, n := range nodes {
		out[i] = procCPU(n.cmd.Process.Pid)
	}
	return out
}

// procCPU is a process's CPU seconds so far (Linux; 0 elsewhere): the sum of its
// threads' run time in nanoseconds from schedstat, which a short run's few milliseconds
// show, unlike the 10 ms ticks of /proc/<pid>/stat. Threads that ended are not counted
// (a Go process keeps its threads).
func procCPU(pid int) float64 {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0
	}
	var ns float64
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if err != nil {
			continue // ended meanwhile
		}
		if f := strings.Fields(string(b)); len(f) > 0 {
			v, _ := strconv.ParseFloat(f[0], 64)
			ns += v
		}
	}
	return ns / 1e9
}

// syncBuffer is a buffer written by one goroutine and read by another.
type syncBuffer struct {
	mu sync.Mutex // protects b
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b.Len() < 64<<10 {
		s.b.Write(p)
	}
	return len(p), nil
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
