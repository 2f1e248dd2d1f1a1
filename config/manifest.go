package config

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"

	"github.com/agentmux/agentmux/permission"
	"time"
)

// Defaults for a host, applied by Load where the manifest says nothing.
const (
	DefaultInitTimeout     = 10 * time.Second
	DefaultQuestionTimeout = 60 * time.Second
	DefaultStopGrace       = 5 * time.Second
	// DefaultCheckpointInterval is a host's checkpoint_interval.
	DefaultCheckpointInterval = time.Minute
	DefaultMaxLineBytes       = 1 << 20
	DefaultConcurrency        = 64
	DefaultNATSListen         = "127.0.0.1:4222"
	DefaultMetricsAddr        = "127.0.0.1:9464"
	// DefaultConsoleAddr is where `agentmux console` listens unless told otherwise; a
	// node's programs may not connect to its port (their sandbox).
	DefaultConsoleAddr = "127.0.0.1:9470"
)

// Sandboxes a program can run in ([hosts.X] sandbox, [supervisors.X], [tools.X]).
const (
	SandboxLandlock = "landlock"
	SandboxNone     = "none"
)

// Strategies a supervisor can use.
const (
	StrategyRule     = "rule"
	StrategyStatic   = "static"
	StrategyLLM      = "llm"
	StrategyCommand  = "command"
	StrategyHuman    = "human"
	StrategyExternal = "external" // served by some other process on agentmux.ask.<name>
)

// Defaults for supervisors, tools and connections.
const (
	DefaultMaxTokens   = 1024
	DefaultToolTimeout = 30 * time.Second
)

// Providers of [connections.X]: "anthropic" speaks the Messages API, "gemini" Gemini's
// generateContent (for agents through the gateway only); every other one speaks
// OpenAI's Chat Completions (OpenAI itself, vLLM, Ollama, gateways).
const (
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
	ProviderGemini    = "gemini"
)

// OpenAICompatible reports whether provider is served by the Chat Completions client.
func OpenAICompatible(provider string) bool {
	switch provider {
	case ProviderOpenAI, "openai-compatible", "azure", "vllm", "ollama", "lmstudio", "litellm", "openrouter", "groq", "together", "deepseek", "mistral":
		return true
	}
	return false
}

// RiskLevels are the levels an LLM supervisor rates requests at, lowest first.
func RiskLevels() []string { return []string{"low", "medium", "high", "critical"} }

// Manifest is a loaded, validated manifest.
type Manifest struct {
	Path        string
	NATS        NATS
	Metrics     Metrics
	Audit       Audit
	Gateway     Gateway
	Checkpoints Checkpoints
	Hosts       map[string]*Host
	Supervisors map[string]*Supervisor
	Routes      Routes
	Tools       map[string]*Tool
	Connections map[string]*Connection
	Pipelines   map[string]*Pipeline
	Notify      map[string]*Notify
	// Attached are the sources of sessions agentmux did not start; each is a host of
	// Hosts as well.
	Attached map[string]*Attached
	API      API
	Console  Console
	// Pricing prices the tokens agents report without a cost, and the llm supervisors'.
	Pricing Pricing
	// Budgets are the fleet's budgets: each host's daily spend.
	Budgets Budgets
	// Warnings are what may be wrong on this machine only: a command not found, a
	// working directory missing. `validate` prints them; a node logs them.
	Warnings []*Problem
}

// MemoryStore as [nats] store_dir keeps the embedded server's store in a temporary
// directory that the node removes when it stops: nothing survives a restart.
const MemoryStore = ":memory:"

// NATS says where the node's NATS is. An empty URL runs an embedded server.
type NATS struct {
	URL    string `toml:"url"`
	Listen string `toml:"listen"` // embedded server's client listener
	// StoreDir is the embedded server's JetStream store. Empty: `up` keeps it in its state
	// directory, <state>/<node>/nats; MemoryStore: a temporary one, gone with the node.
	StoreDir    string `toml:"store_dir"`
	Credentials string `toml:"credentials"` // a .creds file for an external server
	// ServerName names the embedded server; a cluster needs one per server.
	ServerName string `toml:"server_name"`
	// Replicas of every stream and bucket agentmux declares; 0: 1 on a lone server, 3
	// in a cluster.
	Replicas int `toml:"replicas"`
	// SyncInterval is how often the embedded server fsyncs JetStream: "always", or a
	// duration (the server's default is 2 minutes).
	SyncInterval string   `toml:"sync_interval"`
	Cluster      *Cluster `toml:"cluster"` // the embedded server joins a cluster

	// Users the embedded server lets in; with any, anonymous connections are refused.
	// With URL, the external server's users, which `agentmux nats-auth` writes out.
	Users []*User `toml:"users"`
	// The client identity of the CLI, and of a node on an external server: a user and
	// the variable holding its password, a .creds file (Credentials), or an nkey seed.
	// AGENTMUX_NATS_USER, AGENTMUX_NATS_PASSWORD and AGENTMUX_NATS_CREDS override them.
	User         string `toml:"user"`
	PasswordEnv  string `toml:"password_env"`
	NkeySeedFile string `toml:"nkey_seed_file"`
	// TLS on the embedded server's client listener and cluster routes; the CLI and
	// nodes trust its ca.
	TLS *TLS `toml:"tls"`

	SyncAlways bool     `toml:"-"`
	SyncEvery  Duration `toml:"-"`
}

// Cluster makes the embedded server one of a NATS cluster: [nats.cluster].
type Cluster struct {
	Name   string   `toml:"name"`   // the same on every server
	Listen string   `toml:"listen"` // host:port for routes from the other servers
	Routes []string `toml:"routes"` // nats://host:port of the other servers' cluster listeners
	// User and the variable holding its password authenticate the routes between the
	// servers (the same on every server); [nats.tls] with verify does it by certificate.
	User        string `toml:"user"`
	PasswordEnv string `toml:"password_env"`
}

// Roles a [[nats.users]] entry may have; docs/security.md has what each may do.
const (
	RoleNode       = "node"
	RoleOperator   = "operator"
	RoleViewer     = "viewer"
	RoleConsole    = "console" // agentmux console: answers in the names of the people it signs in
	RoleSupervisor = "supervisor"
)

// User is one identity the embedded server lets in: [[nats.users]].
type User struct {
	Name        string   `toml:"name"`
	PasswordEnv string   `toml:"password_env"` // the variable holding its password
	Nkey        string   `toml:"nkey"`         // or its public nkey, "U…"
	Role        string   `toml:"role"`
	Supervisors []string `toml:"supervisors"` // role supervisor: whose asks it may take
	Tools       []string `toml:"tools"`       // role supervisor: the tools it serves
}

// TLS is [nats.tls]: the embedded server's certificate and the CA clients and servers
// trust. ClientCert and ClientKey are what the CLI presents when Verify asks for one.
type TLS struct {
	Cert       string `toml:"cert"`
	Key        string `toml:"key"`
	CA         string `toml:"ca"`
	Verify     bool   `toml:"verify"` // clients and routes must present a certificate ca signed
	ClientCert string `toml:"client_cert"`
	ClientKey  string `toml:"client_key"`
}

// How long the fleet keeps its history unless [audit] says: the audit, and the sessions'
// events (many more, and read mostly while they are fresh).
const (
	DefaultAuditMaxAge  = 90 * 24 * time.Hour
	DefaultEventsMaxAge = 7 * 24 * time.Hour
)

// Audit says how much history the fleet keeps: records older than a max_age, and the
// oldest beyond a max_bytes, are removed by the NATS server. 0 is no limit.
type Audit struct {
	MaxAge   Duration `toml:"max_age"`   // default DefaultAuditMaxAge; "0s" keeps every record
	MaxBytes int64    `toml:"max_bytes"` // default 0: no limit of size
	// KeepEvents keeps every session's events, for `agentmux logs` after the session
	// and across restarts (default true).
	KeepEvents     bool     `toml:"keep_events"`
	EventsMaxAge   Duration `toml:"events_max_age"`   // default DefaultEventsMaxAge
	EventsMaxBytes int64    `toml:"events_max_bytes"` // default 0: no limit of size
}

// What the fleet keeps of its sessions' checkpoints unless [checkpoints] says.
const (
	DefaultCheckpointMaxAge   = 7 * 24 * time.Hour
	DefaultMaxCheckpointBytes = 16 << 20
	DefaultCheckpointsKept    = 3
)

// Checkpoints is [checkpoints]: what the fleet keeps of its sessions' checkpoints, what
// brings a session back on another node.
type Checkpoints struct {
	MaxAge   Duration `toml:"max_age"`   // default DefaultCheckpointMaxAge
	MaxBytes int64    `toml:"max_bytes"` // of them all; default 0: no limit of size
	// MaxCheckpointBytes bounds one checkpoint (default DefaultMaxCheckpointBytes).
	MaxCheckpointBytes int64 `toml:"max_checkpoint_bytes"`
	Keep               int   `toml:"keep"` // the latest of each session kept; default 3
}

// Gateway is [gateway]: what the audit keeps of the model calls the agents make
// through their nodes' gateways.
type Gateway struct {
	// Record is RecordNone (the default), RecordMetadata or RecordFull.
	Record string `toml:"record"`
}

// What [gateway] record keeps of each model call.
const (
	RecordNone     = "none"
	RecordMetadata = "metadata" // an audit record: connection, model, status, tokens, time
	RecordFull     = "full"     // and its request and answer, which operators alone may read
)

// Metrics says where /metrics, /healthz and /readyz are served.
type Metrics struct {
	Addr string `toml:"addr"`
	// TokenEnv names the variable holding a bearer token /metrics then requires.
	TokenEnv string `toml:"token_env"`
}

// Process is how a program the node starts runs: an agent, a command supervisor, a tool.
// Its keys sit in the table of what it runs for ([hosts.X], [supervisors.X], [tools.X]).
type Process struct {
	Command    string            `toml:"command"`
	Args       []string          `toml:"args"`
	Env        map[string]string `toml:"env"`
	InheritEnv []string          `toml:"inherit_env"` // variables passed on from the node's environment
	WorkingDir string            `toml:"working_dir"` // relative to the manifest's folder
	// Sandbox is how the program is confined: SandboxLandlock (what "" comes to where
	// the kernel has Landlock) or SandboxNone.
	Sandbox string `toml:"sandbox"`
	// SandboxWrite are more paths it may write; SandboxReadDeny more it may not read.
	// Both are made absolute (from the manifest's folder, "~/" from the home).
	SandboxWrite    []string `toml:"sandbox_write"`
	SandboxReadDeny []string `toml:"sandbox_read_deny"`
	// User is who the program runs as, for a node run as root: a user's name or uid. A
	// node run as root refuses to start an agent with none; "root" runs it as root
	// (sandboxed on Linux, without any capability), which the node warns about. A command
	// supervisor or tool with none runs as root without capabilities. A node run as
	// another user starts programs as itself only.
	User string `toml:"user"`
}

// Host is one agent command and how its sessions run. [hosts.X] and [agents.X] decode
// into it alike: the tables below are what a user writes, flat under the host's table;
// HostDerived is what Load makes of them.
type Host struct {
	Name string `toml:"-"`
	Process
	Workspace
	Framing
	Timing
	Defaults
	Sessions
	// Model is how the host's agents reach their model: through the node's gateway, to
	// one of the manifest's connections, whose key they never hold (nil: on their own).
	Model       *HostModel `toml:"model"`
	HostDerived `toml:"-"`
}

// HostModel is a host's model = { connection = "anthropic" }: its agents' model calls
// go through the node's gateway to that connection, and what the provider counted is
// what their sessions spent.
type HostModel struct {
	Connection string `toml:"connection"`
}

// Framing is how the host's agent speaks: its dialect and how its lines are read.
type Framing struct {
	Transport    string `toml:"transport"` // Concerto's; only "stdio"
	Dialect      string `toml:"dialect"`
	InputFormat  string `toml:"input_format"`
	OutputFormat string `toml:"output_format"` // Concerto's; framing handles both
	PlainText    string `toml:"plain_text"`
	MaxLineBytes int    `toml:"max_line_bytes"`
	// Messages are the message types the agent sends; any other is reported as a
	// listen:unhandled event. Empty: every type. result and error always end a session.
	Messages []string `toml:"messages"`
}

// Timing is how long a host's sessions, processes and requests may take.
type Timing struct {
	Timeout         Duration `toml:"timeout"`
	IdleTimeout     Duration `toml:"idle_timeout"`
	InitTimeout     Duration `toml:"init_timeout"`
	QuestionTimeout Duration `toml:"question_timeout"`
	StopGrace       Duration `toml:"stop_grace"`
}

// Defaults are the answers a host's requests get when no supervisor gives one.
type Defaults struct {
	QuestionDefault any    `toml:"question_default"`
	ApprovalDefault string `toml:"approval_default"`
}

// Sessions is how many of a host's sessions run, how, and what they may spend.
type Sessions struct {
	Pool    int            `toml:"pool"`
	Retries int            `toml:"retries"`
	Params  map[string]any `toml:"params"`
	// Nice lowers the priority of the host's agents, and of everything they start, this
	// much below the node's, as nice -n does (0–19): their CPU then yields to the node's
	// supervision path and embedded server when they keep the cores busy.
	Nice int `toml:"nice"`
	// ResultSchema types the session's result (execute_with_schema); ResultRetries is
	// how many new prompts a result that does not fit gets.
	ResultSchema  map[string]any `toml:"result_schema"`
	ResultRetries int            `toml:"result_retries"`
	// Budget pauses a session that spent this much and asks its supervisors whether it
	// goes on (nil: no budget).
	Budget *Budget `toml:"budget"`
	// Checkpoint keeps the session's checkpoints (default true): false, for a host whose
	// agents' state must not leave their node.
	Checkpoint bool `toml:"checkpoint"`
	// CheckpointInterval is how often a running session of an agent that keeps its
	// conversation in a file (Claude Code) is checkpointed, besides its safe points;
	// 0: at its safe points only.
	CheckpointInterval Duration `toml:"checkpoint_interval"`
	// OnLimit is what a session does when its provider says it is at a usage limit (a
	// 429 whose reset is OnLimitWait or more ahead): OnLimitPause (the default) stops it
	// at a checkpoint until the reset, freeing its slot; OnLimitFail leaves it to its
	// agent. MaxPause bounds the pause: a reset further ahead fails the session.
	OnLimit  string   `toml:"on_limit"`
	MaxPause Duration `toml:"max_pause"`
}

// What a session does at a usage limit (Sessions.OnLimit).
const (
	OnLimitPause = "pause"
	OnLimitFail  = "fail"
	// OnLimitWait is the shortest wait a provider's 429 asks for that pauses a session: a
	// shorter one its agent waits out itself, as it retries.
	OnLimitWait = 10 * time.Second
	// DefaultMaxPause is a host's max_pause.
	DefaultMaxPause = 24 * time.Hour
)

// HostDerived is what Load makes of a host's table.
type HostDerived struct {
	// Attached is the source whose sessions this host runs, for a host made of an
	// [attached.X]: it has no command, and its sessions start from hooks, not tasks.
	Attached            *Attached
	ParamsJSON          json.RawMessage // nil when params is empty: no init line
	QuestionDefaultJSON json.RawMessage
	ApprovalDefaultJSON json.RawMessage
	Result              *ResultSpec // nil without result_schema
}

// Sends reports whether the host's agent sends messages of type typ: it declares it,
// or declares nothing. result and error end a session, and usage (what its model calls
// cost) is counted, whether declared or not.
func (h *Host) Sends(typ string) bool {
	return len(h.Messages) == 0 || slices.Contains(h.Messages, typ) || typ == "result" || typ == "error" || typ == "usage"
}

// Supervisor is one decision maker: what every strategy takes, and each strategy's
// keys (only its strategy's are read), flat under the supervisor's table as a user
// writes them; SupervisorDerived is what Load makes of them.
type Supervisor struct {
	Name        string    `toml:"-"`
	Strategy    string    `toml:"strategy"`
	Concurrency int       `toml:"concurrency"`
	Timeout     Duration  `toml:"timeout"`  // caps a command run or an LLM call below the request's deadline
	Fallback    string    `toml:"fallback"` // supervisor asked when this one fails
	Escalate    *Escalate `toml:"escalate"` // hand some requests to a human supervisor

	RuleStrategy
	LLMStrategy
	Process                // command: one run per request
	Answers map[string]any `toml:"answers"` // static: question, approval, tool_call

	SupervisorDerived `toml:"-"`
}

// RuleStrategy is a rule supervisor's keys.
type RuleStrategy struct {
	Rules []*Rule `toml:"rules"`
	// Tool permissions in Claude Code's syntax, checked deny, ask, allow for approvals;
	// Import adds a Claude Code settings file's permissions as they are.
	Allow  []string `toml:"allow"`
	Ask    []string `toml:"ask"`
	Deny   []string `toml:"deny"`
	Import string   `toml:"import"`
	// RulesFile holds more permission rules (permission.File), relative to the
	// manifest: those people gave "always" in the console, which a node writes there
	// and reloads. It need not exist until the first is saved.
	RulesFile string `toml:"rules_file"`
}

// LLMStrategy is an llm supervisor's keys.
type LLMStrategy struct {
	Connection   string   `toml:"connection"`
	Model        string   `toml:"model"` // a model id, or an alias from the connection's models
	SystemPrompt string   `toml:"system_prompt"`
	Temperature  *float64 `toml:"temperature"`
	MaxTokens    int      `toml:"max_tokens"`
	Memory       string   `toml:"memory"` // "" or "session"
}

// SupervisorDerived is what Load makes of a supervisor's table.
type SupervisorDerived struct {
	RulesPath   string // RulesFile, absolute
	Permissions *permission.Set
	AnswersJSON map[string]json.RawMessage
	Conn        *Connection // llm: the resolved connection
	ModelID     string      // llm: the resolved model id
}

// Escalate hands a request to a human supervisor when its text matches When or the
// deciding model rates its risk at one of RiskLevel.
type Escalate struct {
	To        string   `toml:"to"`
	When      string   `toml:"when"`
	RiskLevel []string `toml:"risk_level"`

	Re *regexp.Regexp `toml:"-"`
}

// Rule is one rule of a rule supervisor: a regex over the request text and its answer.
type Rule struct {
	Type   string `toml:"type"`
	Match  string `toml:"match"`
	Answer any    `toml:"answer"`
	// Scope "session": the answer also goes, at once, to the same request later in the
	// same session.
	Scope string `toml:"scope"`

	Re         *regexp.Regexp  `toml:"-"`
	AnswerJSON json.RawMessage `toml:"-"`
}

// Route sends requests to a supervisor. Empty fields match everything.
type Route struct {
	Type       string `toml:"type"`
	Host       string `toml:"host"`
	Match      string `toml:"match"`
	Supervisor string `toml:"supervisor"`
	// PostProcess lets an llm supervisor rework a tool's result before the agent gets it.
	PostProcess bool `toml:"post_process"`
	// Conflict: the route takes only requests to change files another live session on
	// the same repository has touched (the conflict radar, hosts with workspaces).
	Conflict bool `toml:"conflict"`
	// Shadow is a supervisor that decides every request the route takes, beside its
	// supervisor and within the same deadline, whose answer is never given: it is
	// recorded (a shadow audit record) and compared with the answer that was.
	Shadow string `toml:"shadow"`

	Re *regexp.Regexp `toml:"-"`
	// Failover: the supervisor is run by agentmux nodes, whose members acknowledge asks
	// and keep them alive, so a silent member's asks go to another (ask.Asker). False
	// for an external supervisor, which is waited for until the deadline.
	Failover bool `toml:"-"`
	// External: the supervisor is another process, so the decider its answers name is
	// only its claim; they are recorded as external:<supervisor>.
	External bool `toml:"-"`
	// ShadowExternal: the shadow is another process (as External, for the shadow).
	ShadowExternal bool `toml:"-"`
	// promoted is the route with its shadow promoted (Effective); nil without a shadow.
	promoted *Route
}

// Tool is a tool agents may call. With a command it runs once per call (the args as JSON
// on stdin, the result as JSON on stdout); without one it is served by another process
// on agentmux.tool.<name>.
type Tool struct {
	Name string `toml:"-"`
	Process
	Timeout     Duration `toml:"timeout"`
	Description string   `toml:"description"`
}

// Connection configures an LLM provider, as in Concerto.
type Connection struct {
	Name         string            `toml:"-"`
	Provider     string            `toml:"provider"`
	APIKeyEnv    string            `toml:"api_key_env"`
	BaseURL      string            `toml:"base_url"`
	DefaultModel string            `toml:"default_model"`
	Timeout      Duration          `toml:"timeout"`
	Organization string            `toml:"organization"`
	Project      string            `toml:"project"`
	Models       map[string]string `toml:"models"`
	Retry        map[string]any    `toml:"retry"`
	// RateLimit bounds the calls the node's agents make to this connection through its
	// gateway (nil: none). The llm supervisors' own calls are bounded by their
	// concurrency.
	RateLimit *RateLimit `toml:"rate_limit"`
}

// RateLimit is a connection's rate_limit: what one node's agents may ask of it
// together. A call past a limit waits for its turn; the agent sees only the wait.
type RateLimit struct {
	// RequestsPerMinute is how many calls may start in a minute (0: any), in an even
	// flow with bursts up to Burst (default a tenth of a minute's, at least 1).
	RequestsPerMinute int `toml:"requests_per_minute"`
	Burst             int `toml:"burst"`
	// Concurrency is how many calls may be under way at once (0: any).
	Concurrency int `toml:"concurrency"`
}

// HostNames are m's hosts, sorted.
func (m *Manifest) HostNames() []string {
	out := make([]string, 0, len(m.Hosts))
	for name := range m.Hosts {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// WorkDir is host's working folder, absolute ("" when it names none): where its
// agents' relative paths, and rules about them, start.
func (m *Manifest) WorkDir(host string) string {
	h := m.Hosts[host]
	if h == nil || h.WorkingDir == "" {
		return ""
	}
	if filepath.IsAbs(h.WorkingDir) || m.Path == "" {
		return h.WorkingDir
	}
	return filepath.Join(filepath.Dir(m.Path), h.WorkingDir)
}
