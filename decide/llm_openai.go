package decide

import (
	"context"
	"errors"
	"net/http"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/agentmux/agentmux/config"
)

// sdkRetries bounds the SDKs' own retries of 429 and 5xx; the context's deadline, the
// request's, bounds them further.
const sdkRetries = 2

// openAIChat speaks Chat Completions: OpenAI, and any server with the same API (vLLM,
// Ollama, gateways) through base_url.
type openAIChat struct {
	client   openai.Client
	provider string
}

func newOpenAI(c *config.Connection, key string, hc *http.Client) *openAIChat {
	opts := []option.RequestOption{option.WithAPIKey(key), option.WithMaxRetries(sdkRetries)}
	if c.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(c.BaseURL))
	}
	if c.Organization != "" {
		opts = append(opts, option.WithOrganization(c.Organization))
	}
	if c.Project != "" {
		opts = append(opts, option.WithProject(c.Project))
	}
	if c.Timeout > 0 {
		opts = append(opts, option.WithRequestTimeout(c.Timeout.D()))
	}
	if hc != nil {
		opts = append(opts, option.WithHTTPClient(hc))
	}
	return &openAIChat{client: openai.NewClient(opts...), provider: c.Provider}
}

func (o *openAIChat) complete(ctx context.Context, req *chatRequest) (*chatReply, error) {
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(req.System)}
	for _, x := range req.History {
		msgs = append(msgs, openai.UserMessage(x.User), openai.AssistantMessage(x.Assistant))
	}
	msgs = append(msgs, openai.UserMessage(req.User))
	p := openai.ChatCompletionNewParams{
		Model:    shared.ChatModel(req.Model),
		Messages: msgs,
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "decision", Schema: req.Schema, Strict: openai.Bool(false)},
		}},
	}
	if req.Temperature != nil {
		p.Temperature = openai.Float(*req.Temperature)
	}
	if o.provider == config.ProviderOpenAI {
		p.MaxCompletionTokens = openai.Int(int64(req.MaxTokens))
	} else {
		p.MaxTokens = openai.Int(int64(req.MaxTokens)) // what compatible servers read
	}
	resp, err := o.client.Chat.Completions.New(ctx, p)
	if err != nil {
		return nil, err
	}
	reply := &chatReply{InputTokens: resp.Usage.PromptTokens, OutputTokens: resp.Usage.CompletionTokens}
	if len(resp.Choices) == 0 {
		return reply, errors.New("the model returned no choices")
	}
	msg := resp.Choices[0].Message
	if msg.Refusal != "" {
		return reply, errors.New("the model refused: " + msg.Refusal)
	}
	reply.Text = msg.Content
	return reply, nil
}
