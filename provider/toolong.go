package provider

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// TooLongError is a provider's refusal of a request longer than the
// model's context window (or, on Anthropic's 413, larger in bytes than the
// API takes), as a wire reads it from the provider's answer. It is an error
// type of its own so that the agent can tell this refusal from every other
// one: a request refused as too long can be made shorter — results taken
// out of it, the older part summarised (contract §12) — and tried once
// more, where any other 4xx is reported as it is.
//
// A wire returns it only for a refusal that came before any output
// streamed, with the SDK's error in Err; it does not retry such a request
// itself (a 400 is never retried). It says what the provider said and no
// more: the counts are the provider's, 0 when its message does not give
// them, never guessed.
type TooLongError struct {
	// Tokens is the size of the request's input in tokens as the provider
	// counted it, 0 when the provider did not say.
	Tokens int
	// Output is the room for the answer (the request's max_tokens) the
	// provider counted besides Tokens, when its message names it (Anthropic's
	// "input length and `max_tokens` exceed context limit: A + B > C"
	// gives B); 0 otherwise.
	Output int
	// Limit is the model's whole context window in tokens as the provider
	// stated it, 0 when it did not. It is the window, answer included, in
	// every wire's reading: the request fits when Tokens plus its
	// max_tokens is at most Limit.
	Limit int
	// Err is the wire's error, which holds the provider's own message.
	Err error
}

// Error says that the request was refused as too long, with the
// provider's counts when it gave them, then the wire's error.
func (e *TooLongError) Error() string {
	var counts string
	switch {
	case e.Tokens > 0 && e.Output > 0 && e.Limit > 0:
		counts = fmt.Sprintf(" (%d input tokens + %d for the answer > %d)", e.Tokens, e.Output, e.Limit)
	case e.Tokens > 0 && e.Limit > 0:
		counts = fmt.Sprintf(" (%d tokens > %d)", e.Tokens, e.Limit)
	case e.Tokens > 0:
		counts = fmt.Sprintf(" (%d tokens)", e.Tokens)
	case e.Limit > 0:
		counts = fmt.Sprintf(" (the window is %d tokens)", e.Limit)
	}
	msg := "the provider refused the request as longer than the model's context window" + counts
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the wire's error.
func (e *TooLongError) Unwrap() error { return e.Err }

// IsTooLong reports whether err is, or wraps, a provider's refusal of a
// request as too long, and returns it.
func IsTooLong(err error) (*TooLongError, bool) {
	var tl *TooLongError
	if errors.As(err, &tl) {
		return tl, true
	}
	return nil, false
}

// TokenCount is s, a count of tokens a provider's message gave, as a
// number: 0 when it is empty, negative or not a number, so that a message
// in an unexpected shape costs only the count, never the refusal.
func TokenCount(s string) int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 {
		return 0
	}
	return n
}
