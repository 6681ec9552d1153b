package gemini

import (
	"net/http"
	"regexp"
	"sync"

	"github.com/myelin-run/myelin/provider"
)

// The Gemini API refuses a request longer than the model's input limit
// with a 400 INVALID_ARGUMENT whose message is
//
//	The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).
//
// (as its clients have seen it in the field), and a body over its size
// limit with a 400 INVALID_ARGUMENT "Request payload size exceeds the
// limit: 20971520 bytes." (a 413 from the front end, for larger ones).
// The API gives these no machine-readable code, so the messages are
// matched, loosely. Gemini's limit is on the input alone (the answer has
// a limit of its own), so Limit is the input limit: an agent that reads
// it as a window, answer included, makes more room than it must, never
// less.
var (
	// Compiled at its first use, not at init: every myelin process ran the init (issue 34).
	inputTooLong = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)input token count(?:\s*\((\d+)\))?\s*exceeds the maximum number of tokens allowed(?:\s*\((\d+)\))?`)
	})
	payloadTooLong = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)request payload size exceeds the limit`) })
)

// tooLong reads a refusal as too long from an error's status and message,
// nil when it is another error.
func tooLong(status int, message string) *provider.TooLongError {
	switch status {
	case http.StatusRequestEntityTooLarge:
		return &provider.TooLongError{}
	case http.StatusBadRequest:
		if m := inputTooLong().FindStringSubmatch(message); m != nil {
			return &provider.TooLongError{Tokens: provider.TokenCount(m[1]), Limit: provider.TokenCount(m[2])}
		}
		if payloadTooLong().MatchString(message) {
			return &provider.TooLongError{}
		}
	}
	return nil
}
