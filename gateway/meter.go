package gateway

import (
	"bytes"
	"encoding/json"

	"github.com/agentmux/agentmux/protocol"
)

// maxMetered bounds what a meter holds at once: an event of a stream (OpenAI's
// response.completed carries the whole response) or a whole answer that is not one.
// Past it, what the answer held is not counted, and the call says so.
const maxMetered = 32 << 20

// meter reads the provider's answer as it passes to the agent, for the usage the
// provider counted: the events of a stream (server-sent events) one line at a time,
// else the whole answer once it ended. Each figure of usage is the last the answer
// gave: Anthropic's message_delta and each of Gemini's chunks carry the counts so far.
type meter struct {
	stream bool
	// Anthropic's input_tokens excludes the cache's; OpenAI's and Gemini's count the
	// cached in.
	api    api
	buf    []byte // the line so far, or the answer so far
	over   bool   // buf outgrew maxMetered: what it held is lost
	model  string
	counts counts
	finish []string // why the answer ended (stop_reason, finish_reason, a response's status)
}

// counts are the figures of usage an answer gave, by the names the providers give
// them; nil: not given.
type counts struct {
	Input        *int64         `json:"input_tokens"`
	Output       *int64         `json:"output_tokens"`
	CacheWrite   *int64         `json:"cache_creation_input_tokens"`
	CacheRead    *int64         `json:"cache_read_input_tokens"`
	Prompt       *int64         `json:"prompt_tokens"`
	Completion   *int64         `json:"completion_tokens"`
	PromptCache  *cachedDetails `json:"prompt_tokens_details"`
	InputDetails *cachedDetails `json:"input_tokens_details"`
	// Gemini's usageMetadata: its thinking is billed as output.
	PromptCount *int64 `json:"promptTokenCount"`
	Candidates  *int64 `json:"candidatesTokenCount"`
	Thoughts    *int64 `json:"thoughtsTokenCount"`
	CachedCount *int64 `json:"cachedContentTokenCount"`
}

type cachedDetails struct {
	Cached *int64 `json:"cached_tokens"`
}

// usageDoc is where an answer, or an event of a stream, keeps its model and usage:
// at its top (a whole answer, OpenAI's chunks, Gemini's usageMetadata and
// modelVersion), in its message (Anthropic's message_start) or in its response
// (OpenAI's response.completed).
type usageDoc struct {
	Model         string  `json:"model"`
	Usage         *counts `json:"usage"`
	ModelVersion  string  `json:"modelVersion"`
	UsageMetadata *counts `json:"usageMetadata"`
	Message       *inner  `json:"message"`
	Response      *inner  `json:"response"`
	// Why it ended: Anthropic's stop_reason (of a whole answer, or of message_delta's
	// delta), OpenAI's finish_reason of each choice, a response's status.
	StopReason string `json:"stop_reason"`
	Delta      *struct {
		StopReason string `json:"stop_reason"`
	} `json:"delta"`
	Choices []struct {
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Candidates []struct {
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
}

type inner struct {
	Model  string  `json:"model"`
	Usage  *counts `json:"usage"`
	Status string  `json:"status"`
}

// Write takes the next bytes of the answer.
func (m *meter) Write(p []byte) {
	if !m.stream {
		m.keep(p)
		return
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			m.keep(p)
			return
		}
		m.keep(p[:i])
		if !m.over {
			m.line(m.buf)
		}
		m.buf, m.over = m.buf[:0], false
		p = p[i+1:]
	}
}

func (m *meter) keep(p []byte) {
	if m.over {
		return
	}
	if len(m.buf)+len(p) > maxMetered {
		m.buf, m.over = m.buf[:0], true
		return
	}
	m.buf = append(m.buf, p...)
}

// line reads one line of a stream: a data line that may carry usage.
func (m *meter) line(l []byte) {
	data, ok := bytes.CutPrefix(bytes.TrimRight(l, "\r"), []byte("data:"))
	if ok && worthReading(data, m.model == "") {
		m.doc(bytes.TrimSpace(data))
	}
}

// worthReading reports whether an event may say what the meter keeps: usage, why the
// answer ended, or its model when that is not known yet. Most of a stream's events are
// its text, and are not decoded.
func worthReading(data []byte, needModel bool) bool {
	for _, key := range [][]byte{[]byte(`"usage"`), []byte(`"usageMetadata"`), []byte(`"stop_reason":"`), []byte(`"finish_reason":"`),
		[]byte(`"finish_reason": "`), []byte(`"finishReason"`)} {
		if bytes.Contains(data, key) {
			return true
		}
	}
	return needModel && (bytes.Contains(data, []byte(`"model"`)) || bytes.Contains(data, []byte(`"modelVersion"`)))
}

// End reads what is left: the whole answer, or a last line without its newline.
func (m *meter) End() {
	if !m.over && len(m.buf) > 0 {
		switch {
		case m.stream:
			m.line(m.buf)
		case bytes.HasPrefix(bytes.TrimSpace(m.buf), []byte("[")): // Gemini's stream without alt=sse: one array
			var docs []json.RawMessage
			if json.Unmarshal(m.buf, &docs) == nil {
				for _, d := range docs {
					m.doc(d)
				}
			}
		default:
			m.doc(m.buf)
		}
	}
	m.buf = nil
}

// Lost reports whether part of the answer was too large to be read for its usage.
func (m *meter) Lost() bool { return m.over }

func (m *meter) doc(data []byte) {
	var d usageDoc
	if json.Unmarshal(data, &d) != nil {
		return
	}
	for _, x := range []*inner{{Model: d.Model, Usage: d.Usage}, {Model: d.ModelVersion, Usage: d.UsageMetadata}, d.Message, d.Response} {
		if x == nil {
			continue
		}
		if x.Model != "" {
			m.model = x.Model
		}
		if x.Usage != nil {
			m.counts.merge(x.Usage)
		}
	}
	if d.Delta != nil && d.Delta.StopReason != "" {
		d.StopReason = d.Delta.StopReason
	}
	var why []string
	switch {
	case d.StopReason != "":
		why = []string{d.StopReason}
	case d.Response != nil && d.Response.Status != "" && d.Response.Status != "in_progress":
		why = []string{d.Response.Status}
	default:
		for _, c := range d.Choices {
			if c.FinishReason != "" {
				why = append(why, c.FinishReason)
			}
		}
		for _, c := range d.Candidates {
			if c.FinishReason != "" {
				why = append(why, c.FinishReason)
			}
		}
	}
	if len(why) > 0 {
		m.finish = why
	}
}

// Finish is why the answer ended, as its provider said (nil: it did not say).
func (m *meter) Finish() []string { return m.finish }

// merge takes the figures c gives in place of those before.
func (c *counts) merge(o *counts) {
	for _, f := range []struct{ to, from **int64 }{{&c.Input, &o.Input}, {&c.Output, &o.Output}, {&c.CacheWrite, &o.CacheWrite},
		{&c.CacheRead, &o.CacheRead}, {&c.Prompt, &o.Prompt}, {&c.Completion, &o.Completion},
		{&c.PromptCount, &o.PromptCount}, {&c.Candidates, &o.Candidates}, {&c.Thoughts, &o.Thoughts}, {&c.CachedCount, &o.CachedCount}} {
		if *f.from != nil {
			*f.to = *f.from
		}
	}
	if o.PromptCache != nil && o.PromptCache.Cached != nil {
		c.PromptCache = o.PromptCache
	}
	if o.InputDetails != nil && o.InputDetails.Cached != nil {
		c.InputDetails = o.InputDetails
	}
}

// Usage is the call's usage in agentmux's terms: input excludes what was read from
// the provider's cache, counted apart.
func (m *meter) Usage() protocol.Usage {
	c := m.counts
	u := protocol.Usage{Model: m.model, HasTokens: true}
	u.Input, u.Output = value(c.Input), value(c.Output)
	switch {
	case m.api == apiAnthropic:
		u.CacheRead, u.CacheWrite = value(c.CacheRead), value(c.CacheWrite)
		return u
	case m.api == apiGemini:
		u.Input, u.Output = value(c.PromptCount), value(c.Candidates)+value(c.Thoughts)
		u.CacheRead = min(value(c.CachedCount), u.Input)
	case c.Prompt != nil || c.Completion != nil: // Chat Completions
		u.Input, u.Output = value(c.Prompt), value(c.Completion)
	}
	for _, d := range []*cachedDetails{c.PromptCache, c.InputDetails} {
		if d != nil && d.Cached != nil {
			u.CacheRead = min(max(*d.Cached, 0), u.Input)
		}
	}
	u.Input -= u.CacheRead
	return u
}

func value(p *int64) int64 {
	if p == nil || *p < 0 {
		return 0
	}
	return *p
}
