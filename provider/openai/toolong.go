package openai

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"sync"

	"github.com/myelin-run/myelin/provider"
)

// A Chat Completions endpoint refuses a request longer than the model's
// context window with a 400. OpenAI's own says so with the error code
// context_length_exceeded and a message such as
//
//	This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens. Please reduce the length of the messages.
//	This model's maximum context length is 8192 tokens. However, you requested 9000 tokens (8000 in the messages, 1000 in the completion). ...
//
// The servers that copy the API have no such code: vLLM and OpenRouter say
// "maximum context length is M tokens" in the message (vLLM's newer one:
// "However, you requested K output tokens and your prompt contains at least
// N input tokens"), and the llama.cpp server gives the error type
// exceed_context_size_error with n_prompt_tokens and n_ctx beside the
// message. Each of these is read as too long; the counts are taken from
// the message when it gives them, never guessed.
var (
	// Compiled at its first use, not at init: every myelin process ran the init (issue 34).
	maxContext    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)maximum context length is (\d+) tokens`) })
	exceedsWindow = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)exceeds the context window`) })
	inputTokens   = sync.OnceValue(func() []*regexp.Regexp {
		return []*regexp.Regexp{
			regexp.MustCompile(`(?i)resulted in (\d+) tokens`),
			regexp.MustCompile(`(?i)\((\d+) in the messages`),
			regexp.MustCompile(`(?i)\((\d+) in your prompt`),
			regexp.MustCompile(`(?i)prompt contains at least (\d+) input tokens`),
		}
	})
	outputTokens = sync.OnceValue(func() []*regexp.Regexp {
		return []*regexp.Regexp{
			regexp.MustCompile(`(?i)(\d+) (?:in|for) the completion`),
			regexp.MustCompile(`(?i)requested (\d+) output tokens`),
		}
	})
)

// apiError is the part of an error object tooLong reads.
type apiError struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"` // a string at OpenAI, a number at vLLM and llama.cpp
	// the llama.cpp server's counts
	PromptTokens int `json:"n_prompt_tokens"`
	Context      int `json:"n_ctx"`
}

// tooLong reads a refusal as too long from an error's status and error
// object (JSON), nil when it is another error. Only a 400 is read (a
// refusal before any output), but for the llama.cpp server's error type,
// which some of its versions sent with a 500 (retried first, as any 5xx).
func tooLong(status int, body string) *provider.TooLongError {
	var e apiError
	if json.Unmarshal([]byte(body), &e) != nil {
		return nil
	}
	var code string
	_ = json.Unmarshal(e.Code, &code)
	switch {
	case e.Type == "exceed_context_size_error" && status >= 400:
		return &provider.TooLongError{Tokens: max(e.PromptTokens, 0), Limit: max(e.Context, 0)}
	case status != http.StatusBadRequest:
		return nil
	case code == "context_length_exceeded", maxContext().MatchString(e.Message), exceedsWindow().MatchString(e.Message):
	default:
		return nil
	}
	return &provider.TooLongError{
		Tokens: first(inputTokens(), e.Message),
		Output: first(outputTokens(), e.Message),
		Limit:  first([]*regexp.Regexp{maxContext()}, e.Message),
	}
}

// first is the count the first of res that matches msg captures, 0 when
// none does.
func first(res []*regexp.Regexp, msg string) int {
	for _, re := range res {
		if m := re.FindStringSubmatch(msg); m != nil {
			if n := provider.TokenCount(m[1]); n > 0 || strings.TrimSpace(m[1]) == "0" {
				return n
			}
		}
	}
	return 0
}
