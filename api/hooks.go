package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/hook"
	"github.com/agentmux/agentmux/wire"
)

const (
	// maxHookBytes bounds a hook's input: a Write's whole file may be in it.
	maxHookBytes = 8 << 20
	// attachMargin is how long past the source's question_timeout the API waits
	// for a node's answer (opening the session, the bus) before the hook's fallback.
	attachMargin = 10 * time.Second
	// keptField is the longest string of a tool's input sent on when the whole does not
	// fit in a message of the bus.
	keptField = 4 << 10
)

// agentHook is the handler of the hook endpoint of an agent of dialect: Claude Code's
// (an http hook posting here, or `agentmux hook claude-code`) or Codex's (`agentmux
// hook codex`). Its approval is decided by the fleet's supervisors within the source's
// deadline, and the answer is the agent's hook output. When no node decides, the
// source's unreachable says what it gets, and the reason says why.
func (s *Server) agentHook(dialect string) func(http.ResponseWriter, *http.Request, *caller) {
	return func(w http.ResponseWriter, r *http.Request, c *caller) {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxHookBytes+1))
		if err != nil || len(body) > maxHookBytes {
			apiErrorf(w, http.StatusRequestEntityTooLarge, "invalid", "a hook's input of more than %d bytes", maxHookBytes)
			return
		}
		source, err := s.source(r.URL.Query().Get("source"), dialect)
		if err != nil {
			apiErrorf(w, http.StatusBadRequest, "invalid", "%v", err)
			return
		}
		req, err := hook.Request(dialect, body, c.name)
		switch {
		case errors.Is(err, hook.ErrNotDecided):
			writeJSON(w, http.StatusOK, json.RawMessage(hook.Output(dialect, "", hook.Verdict{})))
			return
		case err != nil:
			apiErrorf(w, http.StatusBadRequest, "invalid", "%v", err)
			return
		}
		reply, err := s.attach(r.Context(), source, req)
		v := hook.VerdictFor(reply, err, func(why string) hook.Verdict { return hook.Unreachable(source.Unreachable, why) })
		switch {
		case err != nil:
			s.cfg.Log.Warn("an attached request got its fallback", "source", source.Name, "session", req.Session, "by", c.name, "why", err, "fallback", v.Decision)
		case req.End && reply.Code == "":
			v = hook.Verdict{} // the session's end: nothing to decide
		}
		writeJSON(w, http.StatusOK, json.RawMessage(hook.Output(dialect, req.Event, v)))
	}
}

// source is the attached source named, or the only one of dialect when none is; a
// dialect of "" is any.
func (s *Server) source(name, dialect string) (*config.Attached, error) {
	var all map[string]*config.Attached
	if s.cfg.Manifest != nil {
		all = s.cfg.Manifest.Attached
	}
	of := "of dialect " + dialect
	if dialect == "" {
		of = "at all"
	}
	if name != "" {
		a := all[name]
		if a == nil {
			return nil, fmt.Errorf("no attached source %q in the console's manifest; it has %s", name, sourceNames(all))
		}
		if dialect != "" && a.Dialect != dialect {
			return nil, fmt.Errorf("attached source %q is of dialect %s, not %s", name, a.Dialect, dialect)
		}
		return a, nil
	}
	var found *config.Attached
	for _, a := range all {
		if dialect == "" || a.Dialect == dialect {
			if found != nil {
				return nil, fmt.Errorf("the manifest has several sources %s (%s): name one with ?source=", of, sourceNames(all))
			}
			found = a
		}
	}
	if found == nil {
		return nil, fmt.Errorf("the console's manifest has no [attached.X] %s", of)
	}
	return found, nil
}

func sourceNames(all map[string]*config.Attached) string {
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "none"
	}
	return fmt.Sprint(names)
}

// attach puts req to the nodes that run source and waits for the answer: its
// question_timeout, and a margin.
func (s *Server) attach(ctx context.Context, source *config.Attached, req *wire.AttachRequest) (*wire.AttachReply, error) {
	if st := s.cfg.Conn.Status(); st != nats.CONNECTED {
		return nil, fmt.Errorf("the API is not connected to the bus (%v)", st)
	}
	data, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if max := s.cfg.Conn.MaxPayload(); int64(len(data)) > max {
		data = fit(req, max)
	}
	ctx, cancel := context.WithTimeout(ctx, source.QuestionTimeout.D()+attachMargin)
	defer cancel()
	subject := wire.AttachSubject(source.Name)
	ctx, done := s.waiting.wait(ctx, subject)
	defer done()
	m, err := s.cfg.Conn.RequestWithContext(ctx, subject, data)
	if cause := refusal(ctx); err != nil && cause != nil {
		return nil, cause // the bus refused it: say so, not that it timed out
	}
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return nil, fmt.Errorf("no node runs source %s now", source.Name)
	case errors.Is(err, context.DeadlineExceeded):
		return nil, fmt.Errorf("no node answered within %v", source.QuestionTimeout.D()+attachMargin)
	case err != nil:
		return nil, fmt.Errorf("the bus: %v", err)
	}
	var reply wire.AttachReply
	if err := json.Unmarshal(m.Data, &reply); err != nil {
		return nil, fmt.Errorf("a node's answer is not JSON: %v", err)
	}
	return &reply, nil
}

// fit is req with its tool input cut to what decides it (its short strings: a command,
// a path), so that it fits a message of max bytes; its description says so.
func fit(req *wire.AttachRequest, max int64) []byte {
	var approval map[string]json.RawMessage
	_ = json.Unmarshal(req.Request, &approval)
	var input map[string]json.RawMessage
	_ = json.Unmarshal(approval["input"], &input)
	kept := map[string]json.RawMessage{}
	for k, v := range input {
		var str string
		if json.Unmarshal(v, &str) == nil && len(str) <= keptField {
			kept[k] = v
		}
	}
	kept["agentmux_truncated"] = json.RawMessage("true")
	approval["input"], _ = json.Marshal(kept)
	var desc string
	_ = json.Unmarshal(approval["description"], &desc)
	if len(desc) > keptField {
		desc = desc[:keptField] + "… (cut: the whole call is larger than the bus carries)"
	}
	approval["description"], _ = json.Marshal(desc)
	c := *req
	c.Request, _ = json.Marshal(approval)
	data, _ := json.Marshal(&c)
	return data
}
