package agent

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/internal/pipe"
)

func TestEnvIsExplicit(t *testing.T) {
	t.Setenv("AGENTMUX_TEST_SECRET", "s3cret")
	t.Setenv("AGENTMUX_TEST_KEEP", "kept")
	got := env(&config.Host{Process: config.Process{InheritEnv: []string{"AGENTMUX_TEST_KEEP", "AGENTMUX_TEST_UNSET"}, Env: map[string]string{"MODE": "ci"}}})
	for _, want := range []string{"PATH=" + os.Getenv("PATH"), "AGENTMUX_TEST_KEEP=kept", "MODE=ci"} {
		if !slices.Contains(got, want) {
			t.Errorf("env lacks %s: %v", want, got)
		}
	}
	for _, kv := range got {
		if strings.HasPrefix(kv, "AGENTMUX_TEST_SECRET=") || strings.HasPrefix(kv, "AGENTMUX_TEST_UNSET=") {
			t.Errorf("env leaks %s", kv)
		}
	}
}

func counts() writeCounts {
	c := func() prometheus.Counter { return prometheus.NewCounter(prometheus.CounterOpts{Name: "c"}) }
	return writeCounts{ok: c(), timeout: c(), failed: c()}
}

// inbox collects what the goroutines send to the actor.
func inbox() (chan any, func(any)) {
	ch := make(chan any, 1024)
	return ch, func(m any) { ch <- m }
}

// processStdin is a process agent's stdin: a kernel pipe, read from r.
func processStdin(t *testing.T) (r *os.File, w *fileWriter) {
	t.Helper()
	r, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if w, err = newFileWriter(pw); err != nil {
		t.Fatal(err)
	}
	return r, w
}

// stdinPipes are the two kinds of stdin an agent has: a kernel pipe to a process, and
// the in-memory pipe of an in-process agent.
func stdinPipes(t *testing.T) map[string]func() (io.ReadCloser, pipeWriter) {
	return map[string]func() (io.ReadCloser, pipeWriter){
		"process": func() (io.ReadCloser, pipeWriter) { return processStdin(t) },
		"inproc":  func() (io.ReadCloser, pipeWriter) { return pipe.New(pipe.Size) },
	}
}

func TestStdinWriterWritesInOrderThenCloses(t *testing.T) {
	r, fw := processStdin(t)
	c := counts()
	_, send := inbox()
	sw := newStdinWriter(fw, time.Minute, c, send)
	for i := range 100 {
		sw.write(fmt.Appendf(nil, "line %d\n", i))
	}
	sw.close()
	sw.write([]byte("after close\n")) // dropped: stdin is closing
	all, err := io.ReadAll(r)         // EOF only once the writer closed the pipe
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(all), "\n"), "\n")
	if len(lines) != 100 || lines[0] != "line 0" || lines[99] != "line 99" {
		t.Fatalf("read %d lines, first %q last %q", len(lines), lines[0], lines[len(lines)-1])
	}
	if v := testutil.ToFloat64(c.ok); v != 100 {
		t.Fatalf("ok writes = %v", v)
	}
}

func TestStdinWriterTimesOutWhenNobodyReads(t *testing.T) {
	_, fw := processStdin(t) // nobody reads
	c := counts()
	sent, send := inbox()
	sw := newStdinWriter(fw, 100*time.Millisecond, c, send)
	sw.write(make([]byte, 1<<20)) // more than any pipe buffer
	select {
	case m := <-sent:
		wf, ok := m.(*writeFailed)
		if !ok || !wf.timeout {
			t.Fatalf("sent %#v; want a write timeout", m)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a blocked write never timed out")
	}
	if v := testutil.ToFloat64(c.timeout); v != 1 {
		t.Fatalf("timeouts = %v", v)
	}
	sw.write([]byte("ignored\n")) // after a failure writes are no-ops, and do not block
}

// The actor writes to stdin without ever waiting, though nobody reads: what the pipe
// takes goes in at once, the rest waits in the writer's queue, and the agent reads
// every line in order once it reads.
func TestStdinWritesNeverWaitAndStayInOrder(t *testing.T) {
	for kind, open := range stdinPipes(t) {
		t.Run(kind, func(t *testing.T) {
			r, w := open()
			c := counts()
			_, send := inbox()
			sw := newStdinWriter(w, time.Minute, c, send)
			line := func(i int) []byte { return fmt.Appendf(nil, "%04d %s\n", i, strings.Repeat("x", 1000)) }
			wrote := make(chan struct{})
			go func() {
				for i := range 300 { // 300 KB, more than a pipe holds
					sw.write(line(i))
				}
				sw.close()
				close(wrote)
			}()
			select {
			case <-wrote:
			case <-time.After(30 * time.Second):
				t.Fatal("a write waited for a reader")
			}
			all, err := io.ReadAll(r)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 300 {
				if want := line(i); !strings.HasPrefix(string(all), string(want)) {
					t.Fatalf("line %d: read %.20q; want %.20q", i, all, want)
				}
				all = all[len(line(i)):]
			}
			if v := testutil.ToFloat64(c.ok); v < 1 {
				t.Fatalf("ok writes = %v", v)
			}
		})
	}
}

// With nothing queued, a line is in the pipe when write returns: written on the
// actor, with no hand-off to the writer's goroutine.
func TestAnIdleStdinTakesTheLineAtOnce(t *testing.T) {
	r, fw := processStdin(t)
	c := counts()
	_, send := inbox()
	sw := newStdinWriter(fw, time.Minute, c, send)
	defer sw.close()
	raw, err := r.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	for i := range 50 {
		want := fmt.Sprintf("answer %d\n", i)
		sw.write([]byte(want))
		var n int
		var rerr error
		if err := raw.Read(func(fd uintptr) bool { // one read(2): only what is there
			n, rerr = syscall.Read(int(fd), buf)
			n = max(n, 0)
			return true
		}); err != nil {
			t.Fatal(err)
		}
		if got := string(buf[:n]); got != want || rerr != nil {
			t.Fatalf("the pipe held %q (%v) when write returned; want %q", got, rerr, want)
		}
	}
}

func TestReadStderrRateLimitsAndCountsEveryLine(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	sent, send := inbox()
	done := make(chan struct{})
	go func() {
		readStderr(r, send)
		close(done)
	}()
	bw := bufio.NewWriter(w)
	for i := range 1000 {
		fmt.Fprintf(bw, "noise %d\n", i)
	}
	_ = bw.Flush()
	w.Close()
	<-done
	close(sent)
	var published, dropped int
	var last any
	for m := range sent {
		switch l := m.(type) {
		case *stderrLine:
			published++
			dropped += l.dropped
		case *stderrClosed:
			dropped += l.dropped
		}
		last = m
	}
	if _, closed := last.(*stderrClosed); published+dropped != 1000 || published > stderrBurst+stderrRate || !closed {
		t.Fatalf("published %d, dropped %d, last %#v; want 1000 in all, at most a burst published, stderrClosed last", published, dropped, last)
	}
}
