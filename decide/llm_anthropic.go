package decide

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/agentmux/agentmux/config"
)

// decideTool is the one tool the model must call: its input is the decision.
const decideTool = "decide"

// anthropicChat speaks the Messages API; the answer's shape is enforced by making the
// model call a tool whose input schema is that shape.
type anthropicChat struct {
	client anthropic.Client
}

func newAnthropic(c *config.Connection, key string, hc *http.Client) *anthropicChat {
	opts := []option.RequestOption{option.WithAPIKey(key), option.WithMaxRetries(sdkRetries)}
	if c.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(c.BaseURL))
	}
	if c.Timeout > 0 {
		opts = append(opts, option.WithRequestTimeout(c.Timeout.D()))
	}
	if hc != nil {
		opts = append(opts, option.WithHTTPClient(hc))
	}
	return &anthropicChat{client: anthropic.NewClient(opts...)}
}

func (a *anthropicChat) complete(ctx context.Context, req *chatRequest) (*chatReply, error) {
	var msgs []anthropic.MessageParam
	for _, x := range req.History {
		msgs = append(msgs, anthropic.NewUserMessage(anthropic.NewTextBlock(x.User)), anthropic.NewAssistantMessage(anthropic.NewTextBlock(x.Assistant)))
	}
	msgs = append(msgs, anthropic.NewUserMessage(anthropic.NewTextBlock(req.User)))
	schema := anthropic.ToolInputSchemaParam{Properties: req.Schema["properties"]}
	if required, ok := req.Schema["required"].([]string); ok {
		schema.Required = required
	}
	tool := anthropic.ToolUnionParamOfTool(schema, decideTool)
	tool.OfTool.Description = anthropic.String("Record your decision on the agent's request.")
	p := anthropic.MessageNewParams{
		Model:      anthropic.Model(req.Model),
		MaxTokens:  int64(req.MaxTokens),
		System:     []anthropic.TextBlockParam{{Text: req.System}},
		Messages:   msgs,
		Tools:      []anthropic.ToolUnionParam{tool},
		ToolChoice: anthropic.ToolChoiceParamOfTool(decideTool),
	}
	if req.Temperature != nil {
		p.Temperature = anthropic.Float(*req.Temperature)
	}
	resp, err := a.client.Messages.New(ctx, p)
	if err != nil {
		return nil, err
	}
	reply := &chatReply{InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens}
	var text strings.Builder
	for _, block := range resp.Content {
		switch block.Type {
		case "tool_use":
			if block.Name == decideTool {
				reply.Text = string(block.Input)
				return reply, nil
			}
		case "text":
			text.WriteString(block.Text)
		}
	}
	if text.Len() == 0 {
		return reply, errors.New("the model called no decide tool and wrote no text")
	}
	reply.Text = text.String() // parsed leniently: it may still hold the JSON
	return reply, nil
}
