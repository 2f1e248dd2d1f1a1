package main

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nuid"

	"github.com/agentmux/agentmux/internal/agenttest"
	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/wire"
)

// keyHunter is an agent behind the gateway that plays the adversary, one session per
// process: it makes a model call through the gateway with its token, looks for a
// provider's key in its environment, every process's it can read and the node's files
// (its manifest and its store, where the calls' bodies are kept), replays the
// tokens of the sessions before it (kept in its working directory), keeps its own for
// the next, and lies about its usage: an impossible cost, then a total of nothing.
const keyHunter = `import hashlib, json, os, re, sys, urllib.request, urllib.error
want = sys.argv[1]  # the key's sha256: the key itself is nowhere it may read, the manifest included
def has_key(data):
    return any(hashlib.sha256(m).hexdigest() == want for m in re.findall(rb"sk-node-[A-Za-z0-9]+", data))
msg = json.loads(sys.stdin.readline())
base, token = os.environ.get("OPENAI_BASE_URL", ""), os.environ.get("OPENAI_API_KEY", "")
def call(tok):
    body = json.dumps({"model": "fake-model", "stream": True, "messages": [{"role": "user", "content": msg["text"] + " with " + tok}]}).encode()
    req = urllib.request.Request(base + "/chat/completions", data=body, headers={"Authorization": "Bearer " + tok, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            r.read()
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
seen = {"call": call(token), "env_has_key": any(has_key(v.encode()) for v in os.environ.values()), "procs_with_key": [], "replayed": []}
for pid in os.listdir("/proc"):
    try:
        with open("/proc/%s/environ" % pid, "rb") as f:
            if has_key(f.read()):
                seen["procs_with_key"].append(pid)
    except OSError:
        pass
seen["files_with_key"] = []
for top in sys.argv[2:]:
    for root, _, files in os.walk(top):
        for name in files:
            try:
                with open(os.path.join(root, name), "rb") as f:
                    if has_key(f.read()):
                        seen["files_with_key"].append(os.path.join(root, name))
            except OSError:
                pass
for name in sorted(os.listdir(".")):
    if name.startswith("token-"):
        with open(name) as f:
            seen["replayed"].append(call(f.read()))
with open("token-%d" % os.getpid(), "w") as f:
    f.write(token)
seen["base"], seen["token_kind"] = base, token[:4]
print(json.dumps({"type": "usage", "model": "fake-model", "input_tokens": 1, "output_tokens": 1, "cost_usd": 1e308}), flush=True)
print(json.dumps({"type": "usage", "model": "fake-model", "input_tokens": 0, "output_tokens": 0, "cost_usd": 0, "total": True}), flush=True)
print(json.dumps({"type": "result", "text": json.dumps(seen)}), flush=True)
`

// TestAnAgentBehindTheGatewayHoldsNoKey plays an agent that wants the node's provider
// key and its money. A real node, with the key in its environment, serves the model
// gateway; the agent's host reaches its connection through it. The agent's model
// call reaches the scripted provider with the node's key, never the agent's token;
// the agent finds no key in its environment or any process's it can read; a token of
// a session before it (whose process ended) is refused; its lies about its usage do
// not count: the session spent what the provider counted, priced by [pricing]. The
// audit keeps each call ([gateway] record = "full"), its bodies without the token the
// agent put in its own request.
func TestAnAgentBehindTheGatewayHoldsNoKey(t *testing.T) {
	t.Parallel()
	api := agenttest.NewChatCompletions(t)
	key := "sk-node-" + nuid.Next()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil { // the agent keeps its token here, as whichever user it runs
		t.Fatal(err)
	}
	store, manifestDir := filepath.Join(t.TempDir(), "store"), t.TempDir()
	m := fmt.Sprintf(`[nats]
listen = "127.0.0.1:%d"
store_dir = %q
[metrics]
addr = "127.0.0.1:0"
[gateway]
record = "full"
[connections.oa]
provider = "openai"
api_key_env = "NODE_OPENAI_KEY"
base_url = %q
default_model = "fake-model"
[pricing."fake-model"]
input_per_mtok = 3.0
output_per_mtok = 15.0
[hosts.hunter]
command = "python3"
args = ["-c", %q, %q, %q, %q]
working_dir = %q
model = { connection = "oa" }
`, proctest.FreePort(t), store, api.URL(), keyHunter, fmt.Sprintf("%x", sha256.Sum256([]byte(key))), store, manifestDir, dir)
	manifest := filepath.Join(manifestDir, "agentmux.toml")
	if err := os.WriteFile(manifest, []byte(m), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "up", "-c", manifest)
	cmd.Env = []string{"NODE_OPENAI_KEY=" + key}
	up := startProc(t, cmd)
	until(t, "agentmux up", up.stderr, "node up")
	if !strings.Contains(up.stderr.String(), "model gateway up") {
		t.Fatalf("the node started no gateway:\n%s", up.stderr)
	}

	type seen struct {
		Call         int      `json:"call"`
		EnvHasKey    bool     `json:"env_has_key"`
		ProcsWithKey []string `json:"procs_with_key"`
		FilesWithKey []string `json:"files_with_key"`
		Replayed     []int    `json:"replayed"`
		Base         string   `json:"base"`
		TokenKind    string   `json:"token_kind"`
	}
	var sessions []seen
	for _, id := range []string{"t-hunt-1", "t-hunt-2"} {
		follow := runtimeProc(t, "submit", "-c", manifest, "--id", id, "--follow", "hunter", "find the key")
		if code := follow.wait(t, time.Minute); code != exitOK {
			t.Fatalf("%s: exit %d\n%s%s", id, code, follow.stdout, follow.stderr)
		}
		var s seen
		text := resultText(t, follow.stdout.String())
		if err := json.Unmarshal([]byte(text), &s); err != nil {
			t.Fatalf("%s's result %q: %v", id, text, err)
		}
		sessions = append(sessions, s)
	}
	for i, s := range sessions {
		if s.Call != 200 || s.EnvHasKey || len(s.ProcsWithKey) > 0 || len(s.FilesWithKey) > 0 || !strings.HasPrefix(s.Base, "http://127.0.0.1:") || s.TokenKind != "amx-" {
			t.Errorf("session %d saw %+v; want its call answered, no key in its environment, any process's or the node's files, the gateway's address and a token of its own", i+1, s)
		}
	}
	if r := sessions[1].Replayed; len(r) != 1 || r[0] != 401 {
		t.Errorf("the first session's token, replayed by the second: %v; want 401", r)
	}
	keys := api.Keys()
	if len(keys) != 2 || keys[0] != key || keys[1] != key {
		t.Errorf("the provider was called with %d keys %q; want the node's, twice", len(keys), keys)
	}

	// The session spent what the provider counted (100 tokens in, 20 out), priced by
	// [pricing]; its claims are kept as events beside it.
	logs := runtimeProc(t, "logs", "-c", manifest, "t-hunt-1", "-o", "json")
	if code := logs.wait(t, 30*time.Second); code != exitOK {
		t.Fatalf("logs: exit %d\n%s", code, logs.stderr)
	}
	var calls []wire.ModelCall
	var ended *wire.SessionEnded
	claims := 0
	for _, line := range strings.Split(strings.TrimSpace(logs.stdout.String()), "\n") {
		var e struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		if json.Unmarshal([]byte(line), &e) != nil {
			continue
		}
		switch e.Type {
		case wire.EventModelCall:
			var c wire.ModelCall
			_ = json.Unmarshal(e.Data, &c)
			calls = append(calls, c)
		case "usage":
			claims++
		case wire.EventSessionEnded:
			ended = &wire.SessionEnded{}
			_ = json.Unmarshal(e.Data, ended)
		}
	}
	if len(calls) != 1 || calls[0].Status != 200 || calls[0].Usage == nil || calls[0].Usage.Input != 100 || calls[0].Usage.Output != 20 || calls[0].Connection != "oa" {
		t.Errorf("model.call events: %+v; want one, 200, 100 tokens in and 20 out on oa", calls)
	}
	const cost = (100*3.0 + 20*15.0) / 1e6
	if ended == nil || ended.Outcome != "ok" || ended.Spend == nil || ended.Spend.InputTokens != 100 || ended.Spend.OutputTokens != 20 || ended.Spend.CostUSD < cost*0.999 || ended.Spend.CostUSD > cost*1.001 {
		t.Errorf("session.ended: %+v; want ok, 100 in, 20 out, $%g", ended, cost)
	}
	if claims != 2 {
		t.Errorf("%d usage claims among the events; want the agent's two, kept", claims)
	}

	audit := runtimeProc(t, "audit", "-c", manifest, "t-hunt-1", "--kind", wire.EventModelCall, "-o", "json")
	if code := audit.wait(t, 30*time.Second); code != exitOK || strings.Count(audit.stdout.String(), `"kind":"model.call"`) != 1 {
		t.Errorf("audit of the model calls: exit %d, %s%s; want one model.call record", code, audit.stdout, audit.stderr)
	}
	bodies := runtimeProc(t, "calls", "-c", manifest, "t-hunt-1", "--bodies")
	code := bodies.wait(t, 30*time.Second)
	out := bodies.stdout.String()
	if code != exitOK || !strings.Contains(out, "oa/fake-model") || !strings.Contains(out, "find the key with [redacted]") || !strings.Contains(out, "chat.completion.chunk") {
		t.Errorf("calls --bodies: exit %d\n%s%s\nwant the call, its request with the token cut out and its answer", code, out, bodies.stderr)
	}
	if strings.Contains(out, "amx-") || strings.Contains(out, key) {
		t.Errorf("calls --bodies shows a token or the key:\n%s", out)
	}
}

// resultText is the text of the result submit --follow printed.
func resultText(t *testing.T, out string) string {
	t.Helper()
	var r struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.Text == "" {
		t.Fatalf("no result's text in %q: %v", out, err)
	}
	return r.Text
}
