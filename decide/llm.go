package decide

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/protocol"
	"github.com/agentmux/agentmux/wire"
)

// Time kept back from a request's deadline so a fallback can still answer after a
// model call that used all it was given.
const (
	maxFallbackReserve = 2 * time.Second
	fallbackShare      = 4 // at most a quarter of the time left
)

// LLMCall is one call to a model, for metrics.
type LLMCall struct {
	Supervisor   string
	Model        string
	Outcome      string // ok, error, timeout, unparseable
	Took         time.Duration
	InputTokens  int64
	OutputTokens int64
}

// LLMObserver is told of every model call.
type LLMObserver func(LLMCall)

// chatModel is one provider's API.
type chatModel interface {
	complete(ctx context.Context, req *chatRequest) (*chatReply, error)
}

type chatRequest struct {
	Model       string
	System      string
	History     []wire.Exchange // earlier questions and answers, oldest first
	User        string
	Schema      map[string]any
	Temperature *float64
	MaxTokens   int
}

type chatReply struct {
	Text                      string
	InputTokens, OutputTokens int64
}

// Memory keeps an llm supervisor's exchanges with each session, so that whichever
// member answers a session's next request sees the earlier ones. store.Memory keeps them
// in a KV bucket for the whole fleet; without one, each process remembers its own.
type Memory interface {
	// History returns the session's exchanges with supervisor, oldest first.
	History(ctx context.Context, supervisor, session string) ([]wire.Exchange, error)
	// Remember adds one exchange, keeping at most the latest wire.MemoryTurns.
	Remember(ctx context.Context, supervisor, session string, x wire.Exchange) error
}

// LLM decides by asking a model, in the shape each request needs.
type LLM struct {
	sup      *config.Supervisor
	model    chatModel
	memory   Memory // nil without memory = "session"
	log      *slog.Logger
	observe  LLMObserver
	tracer   trace.Tracer // nil: no spans
	provider string       // the connection's, for its spans
	decider  string
}

// NewLLM builds the llm strategy of s from its connection.
func NewLLM(s *config.Supervisor, deps Deps) (*LLM, error) {
	c := s.Conn
	if c == nil {
		return nil, fmt.Errorf("decide: supervisor %q has no connection", s.Name)
	}
	key := ""
	if c.APIKeyEnv != "" {
		if key = deps.Getenv(c.APIKeyEnv); key == "" {
			return nil, fmt.Errorf("decide: supervisor %q: connection %q reads its API key from $%s, which is not set; export it, or use another connection", s.Name, c.Name, c.APIKeyEnv)
		}
	}
	var model chatModel
	if c.Provider == config.ProviderAnthropic {
		model = newAnthropic(c, key, deps.HTTPClient)
	} else {
		model = newOpenAI(c, key, deps.HTTPClient)
	}
	l := &LLM{sup: s, model: model, observe: deps.Observe, decider: "llm:" + s.Name + "/" + s.ModelID, log: deps.Log,
		tracer: deps.Tracer, provider: c.Provider}
	if s.Memory == "session" {
		l.memory = deps.Memory
		if l.memory == nil {
			l.memory = newMemory(memorySessions, wire.MemoryTurns)
		}
	}
	return l, nil
}

// Decide implements Decider.
func (l *LLM) Decide(ctx context.Context, r *Request) (Decision, error) {
	m := r.Message()
	user := render(r, m)
	text, call, err := l.ask(ctx, r, user, answerSchema(m))
	if err != nil {
		return Decision{}, err
	}
	reply, perr := parseReply(text)
	if perr != nil && takesText(m) && strings.TrimSpace(text) != "" {
		// A server that ignores structured output answers in prose: for a question
		// whose answer is a string, the prose is the answer.
		v, _ := json.Marshal(strings.TrimSpace(text))
		reply, perr = &modelReply{Answer: v, Reason: "the model replied in plain text"}, nil
	}
	if perr == nil && takesText(m) && noValue(reply.Answer) && reply.Decision != "" {
		// A model that answers a question in an approval's shape, {"decision": "staging"},
		// for a question that takes any string (its options only suggestions): its choice
		// is the answer.
		reply.Answer, _ = json.Marshal(reply.Decision)
	}
	approval := m.Type == protocol.TypeApproval || m.Type == protocol.TypeBudget // answered approve or deny
	if perr == nil && !approval {
		if err := protocol.ValidateAnswer(m, reply.Answer); err != nil {
			perr = fmt.Errorf("the model's answer does not fit the question: %w", err)
		}
	}
	if perr != nil {
		call.Outcome = "unparseable"
	}
	l.note(call)
	if approval {
		return l.approval(ctx, r, m, user, text, reply, perr), nil
	}
	if perr != nil {
		return Decision{}, perr
	}
	l.remember(ctx, r.Session, user, text)
	return Decision{Value: reply.Answer, Decider: l.decider, Reason: reply.Reason, RiskLevel: reply.RiskLevel}, nil
}

// approval turns the model's reply into "yes" or "no" (or one of the approval's
// options); anything unparseable is a deny.
func (l *LLM) approval(ctx context.Context, r *Request, m *protocol.Message, user, text string, reply *modelReply, perr error) Decision {
	if perr != nil {
		if len(m.Options) > 0 {
			return Decision{Verdict: Decline, Decider: l.decider, Reason: "unparseable decision, declined: " + perr.Error()}
		}
		return Decision{Value: json.RawMessage(`"no"`), Decider: l.decider, Reason: "unparseable decision, denied: " + perr.Error(), RiskLevel: "high"}
	}
	l.remember(ctx, r.Session, user, text)
	if len(m.Options) > 0 {
		v, _ := json.Marshal(reply.Decision)
		if err := protocol.ValidateAnswer(m, v); err != nil {
			return Decision{Verdict: Decline, Decider: l.decider, Reason: "the model chose no offered option: " + err.Error()}
		}
		return Decision{Value: v, Decider: l.decider, Reason: reply.Reason, RiskLevel: reply.RiskLevel}
	}
	value := `"no"`
	if reply.Decision == "approve" {
		value = `"yes"`
	}
	reason := reply.Reason
	if reply.Decision != "approve" && reply.Decision != "deny" {
		reason = fmt.Sprintf("decision %q is neither approve nor deny: denied. %s", reply.Decision, reply.Reason)
	}
	return Decision{Value: json.RawMessage(value), Decider: l.decider, Reason: reason, RiskLevel: reply.RiskLevel}
}

// postProcess reworks a tool's result into what the agent receives.
func (l *LLM) postProcess(ctx context.Context, r *Request, result json.RawMessage) (Decision, error) {
	m := r.Message()
	user := render(r, m) + fmt.Sprintf("The tool returned:\n%s\nReturn, as answer, what the agent should receive as the tool's result: the result itself, or a corrected, trimmed or redacted form of it.\n", compact(result))
	text, call, err := l.ask(ctx, r, user, postProcessSchema())
	if err != nil {
		return Decision{}, err
	}
	reply, err := parseReply(text)
	if err == nil && len(reply.Answer) == 0 {
		err = errNoAnswer
	}
	if err != nil {
		call.Outcome = "unparseable"
	}
	l.note(call)
	if err != nil {
		return Decision{}, fmt.Errorf("post-processing the tool result: %w", err)
	}
	return Decision{Value: reply.Answer, Decider: l.decider, Reason: "tool result post-processed: " + reply.Reason}, nil
}

var errNoAnswer = errors.New("no answer in the model's reply")

// ask calls the model within the request's deadline, less a reserve for a fallback. A
// failed call is noted here; a successful one is returned for the caller to note once
// it has read the reply.
func (l *LLM) ask(ctx context.Context, r *Request, user string, schema map[string]any) (string, LLMCall, error) {
	call := LLMCall{Outcome: "ok"}
	if !r.Deadline.IsZero() {
		left := time.Until(r.Deadline)
		if left <= 0 {
			return "", call, fmt.Errorf("no time left before the request's deadline")
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, r.Deadline.Add(-min(maxFallbackReserve, left/fallbackShare)))
		defer cancel()
	}
	if t := l.sup.Timeout.D(); t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t)
		defer cancel()
	}
	system := instructions
	if l.sup.SystemPrompt != "" {
		system = l.sup.SystemPrompt + "\n\n" + instructions
	}
	req := &chatRequest{Model: l.sup.ModelID, System: system, User: user, Schema: schema,
		Temperature: l.sup.Temperature, MaxTokens: l.sup.MaxTokens}
	if l.memory != nil && r.Session != "" {
		h, err := l.memory.History(ctx, l.sup.Name, r.Session)
		if err != nil {
			// Deciding without the history beats not deciding.
			l.log.Warn("llm supervisor's memory unreadable; deciding without it", "supervisor", l.sup.Name, "session", r.Session, "err", err)
		}
		req.History = h
	}
	begun := time.Now()
	ctx, span := l.startChat(ctx)
	reply, err := l.model.complete(ctx, req)
	call.Took = time.Since(begun)
	if reply != nil {
		call.InputTokens, call.OutputTokens = reply.InputTokens, reply.OutputTokens
	}
	endChat(span, call, err)
	if err != nil {
		call.Outcome = "error"
		if ctx.Err() != nil {
			call.Outcome = "timeout"
			err = fmt.Errorf("model %s did not answer in time: %w", l.sup.ModelID, err)
		}
		l.note(call)
		return "", call, err
	}
	return reply.Text, call, nil
}

// startChat starts the span of a model call, as OpenTelemetry's GenAI conventions
// name it; a no-op span without a tracer.
func (l *LLM) startChat(ctx context.Context) (context.Context, trace.Span) {
	if l.tracer == nil {
		return ctx, noop.Span{}
	}
	return l.tracer.Start(ctx, "chat "+l.sup.ModelID, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.provider.name", l.provider),
		attribute.String("gen_ai.request.model", l.sup.ModelID), attribute.String("agentmux.supervisor", l.sup.Name)))
}

// endChat ends a model call's span with what it used, or why it failed.
func endChat(span trace.Span, call LLMCall, err error) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attribute.Int64("gen_ai.usage.input_tokens", call.InputTokens), attribute.Int64("gen_ai.usage.output_tokens", call.OutputTokens))
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

func (l *LLM) note(c LLMCall) {
	if l.observe != nil {
		c.Supervisor, c.Model = l.sup.Name, l.sup.ModelID
		l.observe(c)
	}
}

func (l *LLM) remember(ctx context.Context, session, user, assistant string) {
	if l.memory != nil && session != "" {
		if err := l.memory.Remember(ctx, l.sup.Name, session, wire.Exchange{User: user, Assistant: assistant}); err != nil {
			l.log.Warn("llm supervisor's memory not written", "supervisor", l.sup.Name, "session", session, "err", err)
		}
	}
}

// noValue reports an answer the model left out or set to null.
func noValue(v json.RawMessage) bool {
	t := bytes.TrimSpace(v)
	return len(t) == 0 || bytes.Equal(t, []byte("null"))
}
