package provider

import "errors"

// BlockedError is a provider's refusal of a request for what it holds,
// given in place of any answer: Gemini's promptFeedback.blockReason (an
// answer with no candidate). It is an error type of its own so that the
// agent's refusal guard can meet it as a refused answer when the request
// ends with a round's tool results (docs/agent.md, "The refusal guard");
// otherwise it is reported as the error it is. A wire returns it only
// before any output streamed. A refusal that ends an answer is not this
// error but Response.Refused.
type BlockedError struct {
	// Reason is the provider's reason, lowercased ("safety",
	// "prohibited_content", "blocklist", ...).
	Reason string
	// Err is the wire's error, which holds the provider's own message.
	Err error
}

// Error is the wire's error.
func (e *BlockedError) Error() string { return e.Err.Error() }

// Unwrap returns the wire's error.
func (e *BlockedError) Unwrap() error { return e.Err }

// IsBlocked reports whether err is, or wraps, a provider's refusal of a
// request for what it holds, and returns it.
func IsBlocked(err error) (*BlockedError, bool) {
	var b *BlockedError
	if errors.As(err, &b) {
		return b, true
	}
	return nil, false
}
