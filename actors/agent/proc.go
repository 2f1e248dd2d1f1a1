package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/dialect"
	"github.com/agentmux/agentmux/internal/pipe"
	"github.com/agentmux/agentmux/internal/procenv"
	"github.com/agentmux/agentmux/internal/queue"
	"github.com/agentmux/agentmux/internal/sandbox"
	"github.com/agentmux/agentmux/internal/shim"
	"github.com/agentmux/agentmux/protocol"
)

const (
	stderrLineLimit  = 16 << 10
	stderrBufferSize = 512 // stderr is mostly quiet; longer lines gather past it
	stderrRate       = 50  // lines per second published per process
	stderrBurst      = 200
)

// process is one running agent process and its pipes. The actor owns it; the goroutines
// started by its serve only send messages.
type process struct {
	cmd    *exec.Cmd
	pid    int
	stdin  *stdinWriter
	stdout io.Closer // read end; closed by the reader, or early by the actor after exit
	stderr io.Closer // read end; likewise (nil for an in-process agent)
	// scratch is its TMPDIR, its own inside its sandbox's, removed once it exits: the
	// session's to count (max_workspace_bytes) and to leave nothing in.
	scratch string
	// serve starts the goroutines that read the pipes and wait for the exit. The actor
	// calls it on processStarted, so their reports always come after it.
	serve func()
}

// removeScratch removes a process's TMPDIR (sandbox.Scratch), if it had one.
func removeScratch(dir string) {
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
}

// env builds the agent's explicit environment (see procenv).
func env(h *config.Host) []string { return procenv.Build(h.InheritEnv, h.Env) }

// launch is how an agent's process is started.
type launch struct {
	host    *config.Host
	dir     string   // where it starts
	env     []string // after the host's environment
	dialect dialect.Dialect
	args    []string         // the session's own, after the dialect's and the host's
	sandbox *sandbox.Sandbox // nil: unsandboxed
}

// startProcess starts l's command with its own process group and a parent-death
// signal, and the goroutines that serve its pipes. send delivers their reports to the
// actor. e's Procs records the process group while it runs (nil: not recorded).
func startProcess(l launch, e *Env, st *stream, counts writeCounts, send func(any)) (*process, error) {
	h, d, sb, procs := l.host, l.dialect, l.sandbox, e.Procs
	args := append(append(append([]string(nil), d.Args()...), h.Args...), l.args...)
	cmd, err := procs.Command(context.Background(), h.Command, args...)
	if err != nil {
		return nil, fmt.Errorf("agent: start %s: %w; check the host's command and PATH", h.Command, err)
	}
	cmd.Dir = l.dir
	cmd.Env = append(env(h), l.env...)
	scratch, err := sb.Scratch()
	if err != nil {
		return nil, fmt.Errorf("agent: start %q: %w", h.Command, err)
	}
	if scratch != "" {
		cmd.Env = append(cmd.Env, "TMPDIR="+scratch, "TMP="+scratch, "TEMP="+scratch)
	}
	shim.Lower(cmd, h.Nice) // the agent and all it starts, from its first instruction

	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	newPipe := func() (*os.File, *os.File, error) {
		r, w, err := os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	inR, inW, err := newPipe()
	if err != nil {
		return nil, fmt.Errorf("agent: stdin pipe: %w", err)
	}
	stdin, err := newFileWriter(inW)
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("agent: stdin pipe: %w", err)
	}
	outR, outW, err := newPipe()
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("agent: stdout pipe: %w", err)
	}
	errR, errW, err := newPipe()
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("agent: stderr pipe: %w", err)
	}
	// The child gets *os.File ends directly, so exec starts no copying goroutines and
	// Wait returns when the process exits even if a grandchild keeps stdout open; the
	// actor's drain timer then closes our read end (the role WaitDelay plays for
	// exec-owned pipes).
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := sb.Start(cmd); err != nil {
		closeAll()
		procs.Forget(cmd)
		removeScratch(scratch)
		return nil, fmt.Errorf("agent: start %q: %w; check the host's command and working_dir", h.Command, err)
	}
	inR.Close()
	outW.Close()
	errW.Close()
	procs.Record(cmd)

	p := &process{cmd: cmd, pid: cmd.Process.Pid, stdout: outR, stderr: errR, scratch: scratch}
	p.stdin = newStdinWriter(stdin, e.WriteTimeout, counts, send)
	p.serve = func() {
		go readStdout(outR, h.MaxLineBytes, plainText(h), !d.Canonical(), counts.frameBytes, st, send)
		go readStderr(errR, send)
		go func() {
			err := cmd.Wait()
			procs.Forget(cmd)
			removeScratch(scratch)
			send(&processExited{err: err})
		}()
	}
	return p, nil
}

// plainText is how h's stdout lines that are not JSON are taken.
func plainText(h *config.Host) protocol.PlainText {
	if h.PlainText == "log" {
		return protocol.PlainTextLog
	}
	return protocol.PlainTextResult
}

// InProc is an agent run inside the runtime's process, on pipes: the load generator's
// "inproc" kind, which shows the runtime's own cost without process spawning.
type InProc func(stdin io.Reader, stdout io.Writer) error

// startInProc runs agent on a goroutine over in-memory pipes that buffer as the
// kernel's do: no file descriptors, so tens of thousands fit in one process. Its pid
// is 0, and closing its pipes stops it.
func startInProc(h *config.Host, agent InProc, st *stream, writeTimeout time.Duration, counts writeCounts, send func(any)) (*process, error) {
	inR, inW := pipe.New(pipe.Size)
	outR, outW := pipe.New(pipe.Size)
	p := &process{stdout: outR}
	p.stdin = newStdinWriter(inW, writeTimeout, counts, send)
	p.serve = func() {
		go readStdout(outR, h.MaxLineBytes, plainText(h), false, counts.frameBytes, st, send)
		send(&stderrClosed{}) // no stderr
		go func() {
			err := agent(inR, outW)
			outW.Close()
			inR.Close()
			send(&processExited{err: err})
		}()
	}
	return p, nil
}

// maxLineBatch bounds the lines one linesRead carries.
const maxLineBatch = 64

// readStdout frames and decodes the agent's stdout until it closes. A running
// session's stream lines it publishes itself (stream); the rest go to the actor, lines
// already read together in one message (linesRead), never waiting for more. With raw
// set (a dialect's process) lines go to the actor undecoded: the dialect's state is
// the actor's.
func readStdout(f io.ReadCloser, limit int, plain protocol.PlainText, raw bool, sizes prometheus.Observer, st *stream, send func(any)) {
	defer f.Close()
	r := protocol.NewReader(f, limit)
	batch := &linesRead{}
	flush := func() {
		if len(batch.lines) > 0 {
			batch.at = time.Now()
			st.toActor(send, batch)
			batch = &linesRead{}
		}
	}
	for {
		if !r.Buffered() || len(batch.lines) == maxLineBatch {
			flush() // the next line may be a while: what was read goes now
		}
		line, err := r.Next()
		if err != nil {
			flush()
			var tooLong *protocol.LineTooLongError
			if errors.As(err, &tooLong) {
				st.toActor(send, &frameError{reason: "too_long", size: tooLong.Size, head: tooLong.Head, err: err})
				continue
			}
			if errors.Is(err, io.EOF) || errors.Is(err, os.ErrClosed) || errors.Is(err, io.ErrClosedPipe) {
				err = nil
			}
			st.toActor(send, &stdoutClosed{err: err})
			return
		}
		sizes.Observe(float64(len(line)))
		if raw {
			st.toActor(send, &rawLine{line: bytes.Clone(line), at: time.Now()})
			continue
		}
		if typ, raw, ok := protocol.StreamLine(line); ok {
			if len(batch.lines) == 0 && st.publish(typ, raw) {
				continue
			}
			start := len(batch.buf)
			batch.buf = append(batch.buf, raw...)
			batch.lines = append(batch.lines, readLine{typ: typ, start: start, end: len(batch.buf)})
			continue
		}
		msg, err := protocol.Decode(line, plain)
		if err != nil {
			flush()
			reason := "invalid_json"
			var inv *protocol.InvalidFrameError
			if errors.As(err, &inv) {
				reason = inv.Reason
			}
			st.toActor(send, &frameError{reason: reason, size: len(line), err: err})
			continue
		}
		batch.lines = append(batch.lines, readLine{msg: msg})
	}
}

// readStderr forwards stderr lines, rate-limited; lines over the limit are counted as
// dropped and reported with the next line that passes, or at the end with stderrClosed.
func readStderr(f *os.File, send func(any)) {
	defer f.Close()
	r := protocol.NewReaderSize(f, stderrLineLimit, stderrBufferSize)
	lim := rate.NewLimiter(stderrRate, stderrBurst)
	dropped := 0
	for {
		line, err := r.Next()
		var tooLong *protocol.LineTooLongError
		switch {
		case errors.As(err, &tooLong):
			dropped++
			continue
		case err != nil:
			send(&stderrClosed{dropped: dropped})
			return
		}
		if !lim.Allow() {
			dropped++
			continue
		}
		send(&stderrLine{line: string(line), dropped: dropped})
		dropped = 0
	}
}

// signalGroup sends sig to the process group led by pid.
func signalGroup(pid int, sig syscall.Signal) error {
	if pid <= 0 {
		return nil // an in-process agent: closing its pipes is all there is
	}
	err := syscall.Kill(-pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil // already gone
	}
	return err
}

// stdinWriter writes lines to the agent's stdin, so that the actor never blocks: a line
// goes straight into the pipe from the actor when nothing is queued before it and the
// pipe has room, and otherwise to the writer's own goroutine, which writes it with a
// deadline.
type stdinWriter struct {
	f       pipeWriter
	timeout time.Duration
	send    func(any)
	counts  writeCounts
	q       *queue.Queue[[]byte]
}

// writeCounts are the stdin write metrics of one host.
type writeCounts struct {
	ok, timeout, failed prometheus.Counter
	seconds             prometheus.Observer
	frameBytes          prometheus.Observer // sizes of the lines read from stdout
}

// pipeWriter is the write end of an agent's stdin.
type pipeWriter interface {
	io.WriteCloser
	SetWriteDeadline(time.Time) error
	// TryWrite writes what of p the pipe takes without waiting.
	TryWrite(p []byte) (int, error)
}

// fileWriter is a process agent's stdin: the write end of a kernel pipe, which Go
// keeps non-blocking.
type fileWriter struct {
	*os.File
	raw syscall.RawConn
}

func newFileWriter(f *os.File) (*fileWriter, error) {
	raw, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	return &fileWriter{File: f, raw: raw}, nil
}

// TryWrite makes one write(2) and does not wait for room: a full pipe takes nothing.
func (f *fileWriter) TryWrite(p []byte) (n int, err error) {
	rerr := f.raw.Write(func(fd uintptr) bool {
		n, err = syscall.Write(int(fd), p)
		return true
	})
	switch {
	case rerr != nil:
		return 0, rerr
	case err == syscall.EAGAIN || err == syscall.EINTR:
		return 0, nil
	case err != nil:
		return 0, err
	}
	return n, nil
}

func newStdinWriter(f pipeWriter, timeout time.Duration, counts writeCounts, send func(any)) *stdinWriter {
	w := &stdinWriter{f: f, timeout: timeout, send: send, counts: counts, q: queue.New[[]byte]()}
	go w.run()
	return w
}

// write writes line, or queues it; it never blocks. Lines written after close or a
// failure are dropped.
func (w *stdinWriter) write(line []byte) { w.q.Offer(line, w.now) }

// now writes what of line the pipe takes at once, on the actor; the writer's goroutine
// writes the rest, and reports any failure, as it would have written it all.
func (w *stdinWriter) now(line []byte) ([]byte, bool) {
	begun := time.Now()
	n, err := w.f.TryWrite(line)
	if err != nil || n < len(line) {
		return line[n:], false
	}
	if w.counts.seconds != nil {
		w.counts.seconds.Observe(time.Since(begun).Seconds())
	}
	w.counts.ok.Inc()
	return nil, true
}

// close closes stdin after the lines already queued; idempotent.
func (w *stdinWriter) close() { w.q.Close() }

func (w *stdinWriter) run() {
	defer w.f.Close()
	w.q.Drain(func(batch [][]byte) bool {
		for _, line := range batch {
			if err := w.f.SetWriteDeadline(time.Now().Add(w.timeout)); err != nil {
				w.send(&writeFailed{err: err})
				return false
			}
			begun := time.Now()
			_, err := w.f.Write(line)
			if w.counts.seconds != nil {
				w.counts.seconds.Observe(time.Since(begun).Seconds())
			}
			if err != nil {
				timeout := errors.Is(err, os.ErrDeadlineExceeded)
				if timeout {
					w.counts.timeout.Inc()
				} else {
					w.counts.failed.Inc()
				}
				w.send(&writeFailed{timeout: timeout, err: err})
				return false
			}
			w.counts.ok.Inc()
		}
		return true
	})
}
