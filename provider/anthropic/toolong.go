package anthropic

import (
	"net/http"
	"regexp"
	"sync"

	"github.com/myelin-run/myelin/provider"
)

// The Messages API refuses a request longer than the model's context window
// with a 400 invalid_request_error whose message is one of
//
//	prompt is too long: 208310 tokens > 200000 maximum
//	input length and `max_tokens` exceed context limit: 199759 + 8192 > 200000, decrease input length or `max_tokens` and try again
//
// the first when the input alone is over the window, the second when the
// input fits but leaves less than max_tokens for the answer; and a body
// over 32 MB with a 413 request_too_large, answered by Cloudflare before
// the API sees the request (its body need not even be JSON). The API gives
// these no machine-readable code, so the messages are matched, loosely (in
// any case, the backquotes optional, the counts optional).
var (
	// Compiled at its first use, not at init: every myelin process ran the init (issue 34).
	promptTooLong = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)prompt is too long(?::\s*(\d+) tokens\s*>\s*(\d+) maximum)?`)
	})
	inputTooLong = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile("(?i)input length and `?max_tokens`? exceed context limit(?::\\s*(\\d+)\\s*\\+\\s*(\\d+)\\s*>\\s*(\\d+))?")
	})
)

// tooLong reads a refusal as too long from an error's status and message,
// nil when it is another error. For the second message Tokens is the input
// (A), Output max_tokens (B) and Limit the window (C): the input may hold
// C − B tokens, which the agent knows, having sent B. A 413 gives no count.
func tooLong(status int, message string) *provider.TooLongError {
	switch status {
	case http.StatusRequestEntityTooLarge:
		return &provider.TooLongError{}
	case http.StatusBadRequest:
		if m := promptTooLong().FindStringSubmatch(message); m != nil {
			return &provider.TooLongError{Tokens: provider.TokenCount(m[1]), Limit: provider.TokenCount(m[2])}
		}
		if m := inputTooLong().FindStringSubmatch(message); m != nil {
			return &provider.TooLongError{Tokens: provider.TokenCount(m[1]), Output: provider.TokenCount(m[2]), Limit: provider.TokenCount(m[3])}
		}
	}
	return nil
}
