package peers

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentmux/agentmux/bench"
	"github.com/agentmux/agentmux/protocol"
)

// tools finds or builds the peers' programs as loadgen does: the temporal CLI in the
// user's cache (built once, minutes), Restate's server and SDK from npm.
func tools(t *testing.T) Tools {
	t.Helper()
	cache, err := DefaultCache()
	if err != nil {
		t.Fatal(err)
	}
	return Tools{Cache: cache, Restate: "restate", Node: "node", Log: slog.New(slog.NewTextHandler(os.Stderr, nil))}
}

// scenario is small: ten sessions, each with three questions, an approval and a
// question nobody answers, whose default comes at 300 ms.
func scenario() bench.Config {
	c := bench.Defaults()
	c.Sessions, c.Rate, c.Progress, c.ProgressRate = 10, 20, 5, 100
	c.Questions, c.Approvals, c.Unrouted, c.QuestionTimeout = 3, 1, 1, 300*time.Millisecond
	c.Timeout = 2 * time.Minute
	return c
}

// TestEveryAnswerIsDurable runs the scenario on each peer: every session ends well,
// no request goes unanswered, each gets the outcome it should, and the peer holds
// every answer durably — in the workflows' histories (Temporal), in the objects'
// state (Restate) — as agentmux holds each in its audit.
func TestEveryAnswerIsDurable(t *testing.T) {
	for _, name := range []string{NameTemporal, NameRestate} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
			defer cancel()
			c := scenario()
			s, err := Run(ctx, name, c, tools(t), slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})), func(string, int, int) {})
			if err != nil {
				t.Fatal(err)
			}
			perSession := c.Questions + c.Approvals + c.Unrouted
			if s.Failed != 0 || s.Missing != 0 {
				t.Fatalf("%d sessions failed, %d requests unanswered: %v", s.Failed, s.Missing, s.Errors)
			}
			if s.Requests != int64(c.Sessions*perSession) {
				t.Errorf("requests answered = %d, want %d", s.Requests, c.Sessions*perSession)
			}
			if got, want := s.Outcomes["answered"], c.Sessions*(c.Questions+c.Approvals); got != want {
				t.Errorf("answered = %d, want %d (outcomes %v)", got, want, s.Outcomes)
			}
			if got, want := s.Outcomes["timed_out"], c.Sessions*c.Unrouted; got != want {
				t.Errorf("defaulted = %d, want %d (outcomes %v)", got, want, s.Outcomes)
			}
			if s.Durable != int64(c.Sessions*perSession) {
				t.Errorf("durable answers = %d, want %d: one for each request of the measured sessions, the warm-up's apart", s.Durable, c.Sessions*perSession)
			}
			if s.ServersCPU <= 0 || s.ServersRSS <= 0 {
				t.Errorf("the peer's own processes were not counted: CPU %.3f s, RSS %d bytes", s.ServersCPU, s.ServersRSS)
			}
			if s.CPU <= s.ServersCPU {
				t.Errorf("CPU %.3f s does not hold the harness's beside the servers' %.3f s", s.CPU, s.ServersCPU)
			}
		})
	}
}

// TestADeadServerFailsItsSessions kills Restate's server with SIGKILL as the first
// request is asked: that request's session and the next fail at once, each with the
// request that could not be answered, the run ends, and Close still stops the service.
func TestADeadServerFailsItsSessions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	src, err := tools(t).RestateSource(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r, err := StartRestate(ctx, "node", src, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pids := r.Processes()
	defer func() {
		r.Close()
		for _, pid := range pids {
			if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("process %d still runs after Close (kill -0: %v)", pid, err)
			}
		}
	}()
	c := scenario()
	c.Sessions, c.Rate = 2, 1 // the second begins after the server is dead
	_, err = bench.RunPeer(ctx, c, "dead", &killFirst{Restate: r}, func(string, int, int) {})
	if err == nil {
		t.Fatal("a run against a dead server reported no error")
	}
	// Both sessions failed, each on what was refused, and the durable count could not
	// be taken; the error says all three.
	for _, want := range []string{"2 sessions failed", "request ", "begin the session", "durable answers could not be counted", "connection refused"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q, want %q in it", err, want)
		}
	}
}

// killFirst is Restate whose server is killed as the first request is asked; its
// processes are the service alone, which lives on.
type killFirst struct {
	*Restate
	once sync.Once
}

func (k *killFirst) Ask(ctx context.Context, session string, m *protocol.Message, fallback json.RawMessage) (json.RawMessage, error) {
	k.once.Do(func() {
		_ = k.server.cmd.Process.Kill()
		<-k.server.done
	})
	return k.Restate.Ask(ctx, session, m, fallback)
}

func (k *killFirst) Processes() []int { return []int{k.service.pid()} }

// TestToolsSayWhatIsMissing: a Restate directory without the service says where it
// looked and what to do.
func TestToolsSayWhatIsMissing(t *testing.T) {
	tl := tools(t)
	tl.Restate = filepath.Join(t.TempDir(), "nowhere")
	_, err := tl.RestateSource(context.Background())
	if err == nil || !strings.Contains(err.Error(), "nowhere") || !strings.Contains(err.Error(), "bench/peers/restate") {
		t.Fatalf("err = %v, want where it looked and what to pass", err)
	}
	if _, err := Run(context.Background(), "kafka", scenario(), tl, slog.Default(), func(string, int, int) {}); err == nil || !strings.Contains(err.Error(), "use temporal or restate") {
		t.Fatalf("err = %v, want the peers there are", err)
	}
}
