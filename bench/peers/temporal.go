package peers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/agentmux/agentmux/protocol"
)

// The Temporal peer's names.
const (
	temporalQueue    = "agentmux-peer"
	temporalWorkflow = "session"
	temporalAsk      = "ask" // the Update each request is
	temporalEnd      = "end" // the signal that ends a session
)

// Temporal is the Temporal peer: its dev server (`temporal server start-dev`, keeping
// its history in a SQLite file) and, in this process, a worker of the Go SDK and the
// client that starts a workflow per session and sends each request as an Update.
type Temporal struct {
	server *proc
	client client.Client
	worker worker.Worker

	mu       sync.Mutex
	sessions []string
}

// StartTemporal starts Temporal's dev server from the temporal binary, keeping its
// files in dir, and its worker, which logs to log (the SDK logs each workflow task at
// debug, so give it a logger at warn); Close stops both.
func StartTemporal(ctx context.Context, binary, dir string, log *slog.Logger) (*Temporal, error) {
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	hostPort := "127.0.0.1:" + strconv.Itoa(ports[0])
	server, err := startProc(dir, "temporal", binary, "server", "start-dev", "--headless", "--ip", "127.0.0.1",
		"--port", strconv.Itoa(ports[0]), "--http-port", strconv.Itoa(ports[1]), "--metrics-port", strconv.Itoa(ports[2]),
		"--db-filename", filepath.Join(dir, "temporal.db"), "--log-level", "error")
	if err != nil {
		return nil, err
	}
	t := &Temporal{server: server}
	logger := tlog.NewStructuredLogger(log)
	err = poll(ctx, serverWait, func() error {
		if err := server.exited(); err != nil {
			return backoffStop{err}
		}
		c, err := client.Dial(client.Options{HostPort: hostPort, Logger: logger})
		if err != nil {
			return err
		}
		if _, err := c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
			c.Close()
			return err
		}
		t.client = c
		return nil
	})
	if err != nil {
		server.stop()
		return nil, fmt.Errorf("temporal dev server on %s: %w (its log: %s)", hostPort, err, server.logPath)
	}
	t.worker = worker.New(t.client, temporalQueue, worker.Options{})
	t.worker.RegisterWorkflowWithOptions(sessionWorkflow, workflow.RegisterOptions{Name: temporalWorkflow})
	if err := t.worker.Start(); err != nil {
		t.Close()
		return nil, fmt.Errorf("temporal worker: %w", err)
	}
	return t, nil
}

// Close stops the worker, the client and the server.
func (t *Temporal) Close() {
	if t.worker != nil {
		t.worker.Stop()
	}
	if t.client != nil {
		t.client.Close()
	}
	t.server.stop()
}

// Begin starts the session's workflow.
func (t *Temporal) Begin(ctx context.Context, session string) error {
	_, err := t.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: session, TaskQueue: temporalQueue}, temporalWorkflow)
	if err == nil {
		t.mu.Lock()
		t.sessions = append(t.sessions, session)
		t.mu.Unlock()
	}
	return err
}

// Ask sends m as an Update of the session's workflow and waits for it to complete: its
// result is then in the workflow's history.
func (t *Temporal) Ask(ctx context.Context, session string, m *protocol.Message, fallback json.RawMessage) (json.RawMessage, error) {
	req, err := newRequest(m, fallback)
	if err != nil {
		return nil, err
	}
	h, err := t.client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: session, UpdateName: temporalAsk,
		Args: []any{req}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err != nil {
		return nil, err
	}
	var answer string
	if err := h.Get(ctx, &answer); err != nil {
		return nil, err
	}
	return json.Marshal(answer)
}

// End signals the session's workflow to complete once its Updates have.
func (t *Temporal) End(ctx context.Context, session string, failed error) error {
	outcome := "ok"
	if failed != nil {
		outcome = failed.Error()
	}
	return t.client.SignalWorkflow(context.WithoutCancel(ctx), session, "", temporalEnd, outcome)
}

// Durable counts the completed Updates in the histories of the workflows of the
// sessions whose names begin with prefix.
func (t *Temporal) Durable(ctx context.Context, prefix string) (int64, error) {
	t.mu.Lock()
	sessions := append([]string(nil), t.sessions...)
	t.mu.Unlock()
	var n int64
	for _, s := range sessions {
		if !strings.HasPrefix(s, prefix) {
			continue
		}
		it := t.client.GetWorkflowHistory(ctx, s, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				return 0, fmt.Errorf("workflow %s's history: %w", s, err)
			}
			if ev.GetEventType() == enums.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED {
				n++
			}
		}
	}
	return n, nil
}

// Processes is the dev server.
func (t *Temporal) Processes() []int { return []int{t.server.pid()} }

// sessionWorkflow is a session: it answers each request Update by the rule until it is
// signalled to end, then completes once every Update has, returning how many it
// answered.
func sessionWorkflow(ctx workflow.Context) (int, error) {
	answered := 0
	err := workflow.SetUpdateHandler(ctx, temporalAsk, func(_ workflow.Context, r request) (string, error) {
		answered++
		if r.Fallback != "" {
			return r.Fallback, nil
		}
		return rule(r), nil
	})
	if err != nil {
		return 0, err
	}
	var outcome string
	workflow.GetSignalChannel(ctx, temporalEnd).Receive(ctx, &outcome)
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return answered, err
	}
	if outcome != "ok" {
		return answered, errors.New(outcome)
	}
	return answered, nil
}

// serverWait bounds a peer server's start.
const serverWait = 2 * time.Minute
