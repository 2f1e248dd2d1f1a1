package sim

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// runtimeSide drives a sim over pipes, as the runtime does.
type runtimeSide struct {
	t    *testing.T
	in   *io.PipeWriter // the sim's stdin
	out  *bufio.Scanner // the sim's stdout
	done chan error
}

func startSim(t *testing.T, opts Options) *runtimeSide {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	rs := &runtimeSide{t: t, in: inW, out: bufio.NewScanner(outR), done: make(chan error, 1)}
	rs.out.Buffer(nil, 4<<20)
	go func() {
		err := Run(inR, outW, opts)
		outW.Close()
		rs.done <- err
	}()
	t.Cleanup(func() { inW.Close(); outR.Close() })
	return rs
}

func (rs *runtimeSide) send(line string) {
	rs.t.Helper()
	if _, err := io.WriteString(rs.in, line+"\n"); err != nil {
		rs.t.Fatal(err)
	}
}

// next reads the sim's next line as a JSON object.
func (rs *runtimeSide) next() map[string]any {
	rs.t.Helper()
	if !rs.out.Scan() {
		rs.t.Fatalf("the sim wrote nothing more: %v", rs.out.Err())
	}
	var m map[string]any
	if err := json.Unmarshal(rs.out.Bytes(), &m); err != nil {
		rs.t.Fatalf("line %q: %v", rs.out.Text(), err)
	}
	return m
}

func prompt(script string) string {
	b, _ := json.Marshal(map[string]string{"type": "prompt", "text": script, "session": "s1"})
	return string(b)
}

func TestSessionsWithInitQuestionsAndResult(t *testing.T) {
	var transcript strings.Builder
	var mu sync.Mutex
	rs := startSim(t, Options{Capabilities: []string{"interrupt"}, Transcript: writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return transcript.Write(p)
	})})
	rs.send(`{"type":"init","params":{}}`)
	if ack := rs.next(); ack["type"] != "init_ack" || ack["capabilities"].([]any)[0] != "interrupt" {
		t.Fatalf("init answered %v", ack)
	}
	for n := 1; n <= 2; n++ {
		rs.send(prompt(`{"steps":[{"send":{"type":"question","id":"q1","question":"go?"}},{"await":"q1"},{"result":"done"}]}`))
		if q := rs.next(); q["id"] != "q1" {
			t.Fatalf("question %v", q)
		}
		rs.send(`{"type":"response","id":"q1","value":"yes","outcome":"answered"}`)
		res := rs.next()
		answers, _ := json.Marshal(res["answers"])
		if res["type"] != "result" || string(answers) != `{"q1":{"outcome":"answered","value":"yes"}}` || res["session_number"] != float64(n) {
			t.Fatalf("session %d result %v", n, res)
		}
	}
	rs.in.Close()
	if err := <-rs.done; err != nil {
		t.Fatalf("Run ended with %v; want nil at EOF", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.HasPrefix(transcript.String(), "runtime: {\"type\":\"init\",\"params\":{}}\nagent: {") {
		t.Fatalf("transcript:\n%s", transcript.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestInterruptEndsTheSession(t *testing.T) {
	rs := startSim(t, Options{})
	rs.send(prompt(`{"steps":[{"send":{"type":"progress","message":"busy"}},{"sleep":"1m"},{"result":"never"}]}`))
	rs.next()
	rs.send(`{"type":"message","text":"hurry"}`)
	rs.send(`{"type":"interrupt","reason":"stop"}`)
	res := rs.next()
	if res["interrupted"] != true || res["messages"].([]any)[0] != "hurry" {
		t.Fatalf("result %v", res)
	}
}

func TestExitStepAndBadScript(t *testing.T) {
	rs := startSim(t, Options{})
	rs.send(prompt(`{"steps":"not a list"}`))
	if e := rs.next(); e["type"] != "error" || !strings.Contains(e["message"].(string), "sim: script") {
		t.Fatalf("bad script answered %v", e)
	}
	rs.send(prompt(`{"steps":[{"exit":7}]}`))
	select {
	case err := <-rs.done:
		var exit *ErrExit
		if !errors.As(err, &exit) || exit.Code != 7 {
			t.Fatalf("Run returned %v; want exit 7", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the exit step did not end Run")
	}
}

func TestPlainTextPromptRunsTheGeneratedScript(t *testing.T) {
	rs := startSim(t, Options{Generate: Generate{Progress: 2, Questions: 3}})
	rs.send("just some words")
	var kinds []string
	for {
		m := rs.next()
		switch m["type"] {
		case "question":
			kinds = append(kinds, m["kind"].(string))
			rs.send(`{"type":"response","id":"` + m["id"].(string) + `","value":"x"}`)
		case "result":
			if strings.Join(kinds, ",") != "prompt,confirm,select" {
				t.Fatalf("question kinds %v", kinds)
			}
			return
		}
	}
}

func TestGenerateModes(t *testing.T) {
	for mode, want := range map[string]func(Step) bool{
		"crash":   func(s Step) bool { return s.Exit != nil },
		"hang":    func(s Step) bool { return s.Hang },
		"garbage": func(s Step) bool { return s.Raw != nil },
	} {
		found := false
		for _, s := range (Generate{Progress: 1, Questions: 1, Mode: mode}).Script().Steps {
			found = found || want(s)
		}
		if !found {
			t.Errorf("mode %s: no step of its kind", mode)
		}
	}
	if _, err := ParseScript([]byte(`{"steps":[{"sleep":"soon"}]}`)); err == nil || !strings.Contains(err.Error(), "soon") {
		t.Errorf("a bad duration must be an error naming it, got %v", err)
	}
}
