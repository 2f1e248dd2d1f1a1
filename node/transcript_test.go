package node

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"golang.org/x/tools/txtar"

	"github.com/agentmux/agentmux/actors/agent"
	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/wire"
)

var update = flag.Bool("update", false, "rewrite the golden sections of testdata/transcripts")

// TestTranscripts replays the golden transcripts in testdata/transcripts: each runs one
// session of the scripted agent under a manifest and compares, line for line, what the
// agent wrote and what the runtime wrote back, then the session's result.
//
// Sections: host.toml (keys of [hosts.w], then any other tables), sim.env (KEY=VALUE
// lines for the agent), prompt (the agent's script), transcript and result (golden;
// rewritten by -update).
func TestTranscripts(t *testing.T) {
	files, err := filepath.Glob("testdata/transcripts/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			t.Parallel()
			replay(t, file)
		})
	}
}

func replay(t *testing.T, file string) {
	ar, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	section := func(name string) string {
		for _, f := range ar.Files {
			if f.Name == name {
				return string(f.Data)
			}
		}
		return ""
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "transcript")
	env := fmt.Sprintf("AGENTMUX_SIM = \"1\", AGENTMUX_TEST_MARK = \"@MARK@\", AGENTMUX_SIM_TRANSCRIPT = %q", path)
	for _, kv := range strings.Split(strings.TrimSpace(section("sim.env")), "\n") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env += fmt.Sprintf(", %s = %q", strings.TrimSpace(k), strings.TrimSpace(v))
		}
	}
	manifest := fmt.Sprintf("[hosts.w]\ncommand = %q\nenv = { %s }\nstop_grace = \"1s\"\nsandbox_write = [%q]\n%s", os.Args[0], env, dir, section("host.toml"))
	f := start(t, manifest)
	events := make(chan *nats.Msg, 1024)
	sub, err := f.n.Bus.Conn.ChanSubscribe(wire.EventSubject("w", "*", ">"), events)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := f.n.Bus.Conn.Flush(); err != nil {
		t.Fatal(err)
	}
	prompt := strings.TrimSpace(section("prompt"))
	res := f.run("w", prompt)
	evs := eventsGolden(t, events, res.Session)
	// Stop the node so the agent has read everything the runtime wrote: stdin closes
	// after the lines queued on it.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := f.n.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	proctest.Within(t, 5*time.Second, func() error {
		if pids := f.leftovers(); len(pids) > 0 {
			return fmt.Errorf("agent still running: %v", pids)
		}
		return nil
	})
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the agent wrote no transcript: %v", err)
	}
	got := map[string]string{
		"transcript": normalizeTranscript(string(raw), prompt, res.Session),
		"result":     resultGolden(t, res),
		"events":     evs,
	}
	if *update {
		for i := range ar.Files {
			if g, ok := got[ar.Files[i].Name]; ok {
				ar.Files[i].Data = []byte(g)
				delete(got, ar.Files[i].Name)
			}
		}
		for _, name := range []string{"transcript", "events", "result"} {
			if g, ok := got[name]; ok {
				ar.Files = append(ar.Files, txtar.File{Name: name, Data: []byte(g)})
			}
		}
		if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	for _, name := range []string{"transcript", "events", "result"} {
		if want := section(name); got[name] != want {
			t.Errorf("%s differs (go test ./node -run TestTranscripts -update rewrites it)\n--- got\n%s--- want\n%s", name, got[name], want)
		}
	}
}

// normalizeTranscript replaces what differs between runs: the session id and the prompt,
// which the golden file already shows in its own section.
func normalizeTranscript(s, prompt, session string) string {
	quoted, _ := json.Marshal(prompt)
	s = strings.ReplaceAll(s, string(quoted), `"<prompt>"`)
	s = strings.ReplaceAll(s, "runtime: "+strings.ReplaceAll(prompt, "\n", " ")+"\n", "runtime: <prompt>\n")
	return strings.ReplaceAll(s, session, "<session>")
}

// eventsGolden lists the session's events in the order published, up to
// session.ended: the type, then the payload without what differs between runs.
func eventsGolden(t *testing.T, events <-chan *nats.Msg, session string) string {
	var b strings.Builder
	deadline := time.After(10 * time.Second)
	for {
		select {
		case m := <-events:
			typ := strings.SplitN(m.Subject, ".", 5)[4]
			var payload map[string]any
			if json.Unmarshal(m.Data, &payload) == nil {
				for _, k := range []string{"latency_ms", "duration_ms", "pid", "node", "at", "time", "started_at"} {
					delete(payload, k)
				}
			}
			data, _ := json.Marshal(payload)
			line := strings.ReplaceAll(fmt.Sprintf("%s %s", typ, data), session, "<session>")
			if len(line) > 300 {
				line = line[:300] + "..."
			}
			b.WriteString(line + "\n")
			if typ == wire.EventSessionEnded {
				return b.String()
			}
		case <-deadline:
			t.Fatalf("no session.ended event; got:\n%s", b.String())
		}
	}
}

// resultGolden is the session's result without what differs between runs.
func resultGolden(t *testing.T, res *agent.Result) string {
	type request struct {
		ID      string `json:"id"`
		Type    string `json:"type"`
		Outcome string `json:"outcome"`
		Decider string `json:"decider"`
	}
	out := struct {
		OK       bool            `json:"ok"`
		Error    string          `json:"error,omitempty"`
		Payload  json.RawMessage `json:"payload,omitempty"`
		Requests []request       `json:"requests,omitempty"`
	}{OK: res.OK, Error: res.Error, Payload: res.Payload}
	for _, r := range res.Requests {
		out.Requests = append(out.Requests, request{r.ID, string(r.Type), string(r.Outcome), r.Decider})
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}
