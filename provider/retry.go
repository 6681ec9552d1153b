package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/myelin-run/myelin/ratelimit"
)

// This file says what a request's failure is to a retry (issue 32 point
// 3, docs/ratelimits.md "Retries"): whether sending the same request
// again may mend it (Transient), and, from a sender that stopped at an
// error answer, why it stopped (RetriesEnded). The wires' senders retry
// before any answer; the agent resends a request that failed before any
// of its answer was shown, and reads both.

// ErrStreamCut is what a wire's error wraps when an answer's stream ended
// before the answer did — the connection closed cleanly, or the stream
// stopped without its last event — so that the agent can tell a cut
// stream from any other failure (Transient). A connection that broke
// mid-stream needs no mark: net/http's io.ErrUnexpectedEOF, a reset
// (syscall.ECONNRESET) and an HTTP/2 stream reset or GOAWAY are read as
// cuts already.
var ErrStreamCut = errors.New("the answer's stream ended before the answer did")

// RetriesEnded is the error of a request whose sender stopped at an error
// answer: Err, the wire's error of that answer, unchanged (its text is
// Err's, and errors.As reaches the SDK's error through it), with why the
// sender stopped there. internal/send returns it around every error
// answer it ends a call with; a wire that describes the error keeps it in
// the chain (WireError.Err). It carries no behaviour: it tells the
// agent whether to send the request again (Transient) and, when the wait
// the provider asked for was too long, says so (Why).
type RetriesEnded struct {
	Err error
	// Retryable is set when the answer is one the sender retries (408,
	// 409, 429, 5xx, unless its x-should-retry header said "false"; any
	// answer whose x-should-retry said "true"): the retries ended for
	// their bound, not for what the answer is.
	Retryable bool
	// RetryAfter is the wait the answer asked for (retry-after-ms,
	// retry-after), 0 when it asked for none or one that could not be
	// read.
	RetryAfter time.Duration
	// TooLong is set when the retries ended because the wait asked for
	// was past Room: what the retries could still wait.
	TooLong bool
	// Room is, with TooLong, the longest wait the retries could still
	// take: what was left of their time (Rules.For), or the most a
	// retry-after may ask for (openai-go's 2 minutes).
	Room time.Duration
}

// Error is the wire's error's.
func (e *RetriesEnded) Error() string { return e.Err.Error() }

// Unwrap returns the wire's error.
func (e *RetriesEnded) Unwrap() error { return e.Err }

// Why says, when the retries ended for a wait too long, why in words:
// "the provider asked to wait 5m0s, more than the 1m58s the retries could
// still wait"; "" otherwise.
func (e *RetriesEnded) Why() string {
	if !e.TooLong {
		return ""
	}
	asked := "longer than can be read"
	if e.RetryAfter > 0 {
		asked = e.RetryAfter.Round(time.Millisecond).String()
	}
	return fmt.Sprintf("the provider asked to wait %s, more than the %s the retries could still wait", asked, e.Room.Round(time.Millisecond))
}

// WaitTooLong returns the RetriesEnded err holds when its retries ended
// because the provider asked for a wait too long for them.
func WaitTooLong(err error) (*RetriesEnded, bool) {
	var re *RetriesEnded
	if errors.As(err, &re) && re.TooLong {
		return re, true
	}
	return nil, false
}

// rawError is an SDK's error that keeps the body of the error as the
// provider sent it: anthropic-sdk-go's and openai-go's *Error (an error
// answer's body, or a stream's error event).
type rawError interface{ RawJSON() string }

// Transient reports whether err, the failure of a request before
// anything of its answer was shown, may pass when the same request is
// sent again: the provider overloaded or at fault (529, 503, any 5xx;
// an overloaded_error or api_error event in a stream, OpenAI's
// server_error object in one), a rate limit (429
// or a throttling error, unless the quota is spent: waiting will not
// lift it), a 408 or 409, a request that got no answer
// (ConnectionError), a stream that broke off (io.ErrUnexpectedEOF,
// syscall.ECONNRESET, ErrStreamCut, an HTTP/2 stream reset or GOAWAY). The sender's verdict decides when
// there is one (RetriesEnded: it read the answer's x-should-retry), and a
// wait asked for that was too long for the retries is not transient.
//
// Never transient: a request refused for what it is (any other 4xx, a
// TooLongError, a BlockedError), a context ended, and an error it does
// not know — a malformed answer, a request that could not be built, an
// error event whose body the wire did not keep (docs/ratelimits.md,
// "Retries", says which).
func Transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || IsFinal(err) {
		return false
	}
	if _, ok := IsTooLong(err); ok {
		return false
	}
	if _, ok := IsBlocked(err); ok {
		return false
	}
	var re *RetriesEnded
	if errors.As(err, &re) {
		return re.Retryable && !re.TooLong && !quotaSpent(err, http.StatusTooManyRequests)
	}
	if status := statusOf(err); status >= http.StatusBadRequest {
		return transientStatus(status) && !quotaSpent(err, status)
	}
	var raw rawError
	if errors.As(err, &raw) && raw.RawJSON() != "" {
		// an error event in a stream that had answered 200
		o := ratelimit.FromResponse("", 0, nil, []byte(raw.RawJSON()), time.Time{})
		return o.Overloaded || o.ServerFault || (o.Limited && !o.QuotaSpent) || bedrockTransient(o.Error) || o.Error == openAIServerError
	}
	var ce *ConnectionError
	return errors.As(err, &ce) || broke(err)
}

// broke reports whether err says that an answer's stream broke off: cut
// (ErrStreamCut), the connection closed or reset under it
// (io.ErrUnexpectedEOF, syscall.ECONNRESET), or, over HTTP/2, its stream
// reset or its connection sent away by the server (streamReset).
func broke(err error) bool {
	return errors.Is(err, ErrStreamCut) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || streamReset(err)
}

// h2Ends are the types of the errors net/http (which bundles its HTTP/2
// code, unexported) and golang.org/x/net/http2 give a reader of an
// answer whose HTTP/2 stream the server reset (RST_STREAM: INTERNAL_ERROR
// from a proxy, REFUSED_STREAM, CANCEL) or whose connection it sent away
// (GOAWAY) mid-answer. Being unexported, net/http's are known by their
// names: errors.As cannot name them.
var h2Ends = map[string]bool{
	"http.http2StreamError": true,
	"http.http2GoAwayError": true,
	"http2.StreamError":     true,
	"http2.GoAwayError":     true,
}

// streamReset reports whether err, or an error it wraps, is an HTTP/2
// stream reset or a GOAWAY (h2Ends): for the answer, what a connection
// reset is over HTTP/1.1.
func streamReset(err error) bool {
	if err == nil {
		return false
	}
	if h2Ends[fmt.Sprintf("%T", err)] {
		return true
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return streamReset(u.Unwrap())
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if streamReset(e) {
				return true
			}
		}
	}
	return false
}

// Failure says in words what err, a transient failure of a request
// (Transient), was: its status ("529 Overloaded", "503 Service
// Unavailable"), an error event in the stream ("the answer's stream
// ended with an error event, overloaded_error"), the stream cut ("the
// answer's stream broke off: anthropic: unexpected EOF"), or no answer
// (Words). Any other error is its own text.
func Failure(err error) string {
	if status := statusOf(err); status >= http.StatusBadRequest {
		return statusWords(status)
	}
	var raw rawError
	if errors.As(err, &raw) && raw.RawJSON() != "" {
		if name := ratelimit.FromResponse("", 0, nil, []byte(raw.RawJSON()), time.Time{}).Error; name != "" {
			return "the answer's stream ended with an error event, " + name
		}
	}
	var ce *ConnectionError
	if errors.As(err, &ce) {
		return Words(ce.Err)
	}
	if broke(err) {
		return "the answer's stream broke off: " + err.Error()
	}
	return err.Error()
}

// statusWords is an HTTP status in words: "503 Service Unavailable",
// "529 Overloaded" (Anthropic's, which net/http does not name).
func statusWords(status int) string {
	if status == 529 {
		return "529 Overloaded"
	}
	return strings.TrimSpace(fmt.Sprintf("%d %s", status, http.StatusText(status)))
}

// bedrockTransient reports whether name is one of the exceptions Bedrock
// sends inside a stream (the anthropic wire reads each as an error event
// of that type, its first letter lower case) that a resend may mend:
// AWS's own advice for each is to retry.
func bedrockTransient(name string) bool {
	for _, n := range [...]string{"throttlingException", "serviceUnavailableException", "internalServerException", "modelStreamErrorException", "modelNotReadyException"} {
		if strings.EqualFold(name, n) {
			return true
		}
	}
	return false
}

// openAIServerError is the name OpenAI gives a fault of its own in an
// error object with no status to say so: Chat Completions' error chunk
// ({"error":{"type":"server_error",...}}, an overload among them) and the
// Responses API's error event and failed response ("code":
// "server_error"). A rate limit there is rate_limit_exceeded, which
// ratelimit reads as one.
const openAIServerError = "server_error"

// transientStatus reports whether an error answer of status may pass when
// sent again: the SDKs' rule (408, 409, 429, 5xx, 529 among them).
func transientStatus(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusConflict ||
		status == http.StatusTooManyRequests || status >= http.StatusInternalServerError
}

// statusOf is the HTTP status of the first WireError in err's chain that
// has one (a platform's WireError names the platform around the wire's,
// which holds the status); 0 when none does.
func statusOf(err error) int {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if we, ok := e.(*WireError); ok && we.Status != 0 {
			return we.Status
		}
	}
	return 0
}

// quotaSpent reports whether the error body err keeps, of an answer of
// status, says the key's quota is spent (OpenAI's insufficient_quota): a
// refusal no wait lifts.
func quotaSpent(err error, status int) bool {
	var raw rawError
	if !errors.As(err, &raw) {
		return false
	}
	body := raw.RawJSON()
	if body == "" {
		return false
	}
	if ratelimit.FromResponse("", status, nil, []byte(body), time.Time{}).QuotaSpent {
		return true
	}
	// openai-go may keep the error object alone, not the body around it
	return ratelimit.FromResponse("", status, nil, []byte(`{"error":`+body+`}`), time.Time{}).QuotaSpent
}

// attemptsKey is the context key of WithAttemptsBefore's count.
type attemptsKey struct{}

// WithAttemptsBefore is ctx telling the wire sending in it that n
// attempts of the same request were made before this send: the agent's
// resend of a request whose wire's own retries had ended. The wire
// numbers its attempts after them — in its retry and wait notices and in
// its ConnectionError's Attempts — so that every attempt of one request
// reads as one count ("attempt 22", "after 22 attempts") however many
// sends made them. It changes nothing that is sent: a retry header still
// counts the send's own retries.
func WithAttemptsBefore(ctx context.Context, n int) context.Context {
	return context.WithValue(ctx, attemptsKey{}, n)
}

// AttemptsBefore is the count ctx carries (WithAttemptsBefore), 0 when it
// carries none.
func AttemptsBefore(ctx context.Context) int {
	n, _ := ctx.Value(attemptsKey{}).(int)
	return max(0, n)
}

// retryDeadlineKey is the context key of WithRetryDeadline's time.
type retryDeadlineKey struct{}

// WithRetryDeadline is ctx telling the wire sending in it that its
// retries bounded by time (a Config.RetryFor) must end by t: the agent,
// which sends a request again within its own RetryFor (agent.Agent),
// gives each attempt what is left of that, so that the wire's retries and
// the agent's resends together stay within the one bound. It is not a
// deadline of the request itself: a stream still answering at t goes on.
func WithRetryDeadline(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, retryDeadlineKey{}, t)
}

// RetryBound is bound — a wire's retry bound in time, counted from start,
// its first attempt — cut to what is left until the deadline ctx carries
// (WithRetryDeadline), never below 0; bound itself when ctx carries none
// or bound is 0 (retries bounded by count).
func RetryBound(ctx context.Context, bound time.Duration, start time.Time) time.Duration {
	t, ok := ctx.Value(retryDeadlineKey{}).(time.Time)
	if !ok || bound <= 0 {
		return bound
	}
	return min(bound, max(0, t.Sub(start)))
}
