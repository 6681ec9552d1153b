package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"
)

// kept is an SDK's error that keeps the provider's body, as
// anthropic-sdk-go's and openai-go's do (RawJSON).
type kept struct{ raw string }

func (k *kept) Error() string   { return "sdk error" }
func (k *kept) RawJSON() string { return k.raw }

func TestTransientTellsWhatASecondSendMayMend(t *testing.T) {
	status := func(s int) error { return StatusError("anthropic", s, "msg", &kept{}) }
	event := func(typ string) error {
		// an error event after a 200: the wire's error keeps the event
		return StatusError("anthropic", 200, "msg", &kept{raw: `{"type":"error","error":{"type":"` + typ + `","message":"m"}}`})
	}
	onPlatform := func(err error) error { return &WireError{Msg: "bedrock: " + err.Error(), Err: err} }
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"no error", nil, false},
		{"408", status(408), true},
		{"409", status(409), true},
		{"429", status(429), true},
		{"500", status(500), true},
		{"502", status(502), true},
		{"503", status(503), true},
		{"529", status(529), true},
		{"400", status(400), false},
		{"401", status(401), false},
		{"403", status(403), false},
		{"404", status(404), false},
		{"413", status(413), false},
		{"422", status(422), false},
		{"a 529 on a platform", onPlatform(status(529)), true},
		{"a 400 on a platform", onPlatform(status(400)), false},
		{"429 insufficient_quota", StatusError("openai", 429, "m", &kept{raw: `{"error":{"message":"m","type":"insufficient_quota","code":"insufficient_quota"}}`}), false},
		{"429 insufficient_quota, the object alone", StatusError("openai", 429, "m", &kept{raw: `{"message":"m","type":"insufficient_quota","code":"insufficient_quota"}`}), false},
		{"an overloaded_error event", event("overloaded_error"), true},
		{"an api_error event", event("api_error"), true},
		{"a rate_limit_error event", event("rate_limit_error"), true},
		{"an invalid_request_error event", event("invalid_request_error"), false},
		{"an overloaded_error event on a platform", onPlatform(event("overloaded_error")), true},
		{"Bedrock's modelStreamErrorException in the stream", onPlatform(event("modelStreamErrorException")), true},
		{"Bedrock's throttlingException in the stream", onPlatform(event("throttlingException")), true},
		{"Bedrock's validationException in the stream", onPlatform(event("validationException")), false},
		{"an error event the wire did not keep", &WireError{Msg: "openai: the stream ended with an error: {...}"}, false},
		{"OpenAI's server_error object in a stream", &WireError{Msg: "openai: ...", Err: &kept{raw: `{"error":{"message":"m","type":"server_error","param":null,"code":null}}`}}, true},
		{"the Responses API's server_error code in a stream", &WireError{Msg: "openai-responses: ...", Err: &kept{raw: `{"error":{"code":"server_error","message":"m"}}`}}, true},
		{"the Responses API's server_is_overloaded event in a stream", &WireError{Msg: "openai-responses: ...", Err: &kept{raw: `{"error":{"type":"error","code":"server_is_overloaded","message":"m","param":null}}`}}, true},
		{"OpenAI's rate_limit_exceeded object in a stream", &WireError{Msg: "openai: ...", Err: &kept{raw: `{"error":{"message":"m","type":"requests","code":"rate_limit_exceeded"}}`}}, true},
		{"OpenAI's invalid_request_error object in a stream", &WireError{Msg: "openai: ...", Err: &kept{raw: `{"error":{"message":"m","type":"invalid_request_error","code":"invalid_value"}}`}}, false},
		{"the retries' end at a 503", &RetriesEnded{Err: status(503), Retryable: true}, true},
		{"the retries' end, x-should-retry false on a 503", status503NotRetried(), false},
		{"the retries' end at a wait too long", &RetriesEnded{Err: status(429), Retryable: true, TooLong: true, RetryAfter: time.Hour, Room: time.Minute}, false},
		{"no answer", fmt.Errorf("anthropic: %w", &ConnectionError{URL: "u", Attempts: 5, Err: syscall.ECONNREFUSED}), true},
		{"a stream broken off", fmt.Errorf("anthropic: %w", io.ErrUnexpectedEOF), true},
		{"a connection reset mid-stream", fmt.Errorf("openai: reading the stream: %w", &net.OpError{Op: "read", Err: syscall.ECONNRESET}), true},
		{"a stream marked cut", fmt.Errorf("gemini: %w", ErrStreamCut), true},
		{"too long", &TooLongError{Err: status(400)}, false},
		{"blocked", &BlockedError{Reason: "safety", Err: errors.New("blocked")}, false},
		{"cancelled", fmt.Errorf("anthropic: %w", context.Canceled), false},
		{"a deadline", context.DeadlineExceeded, false},
		{"a malformed answer", errors.New("anthropic: malformed stream"), false},
	} {
		if got := Transient(c.err); got != c.want {
			t.Errorf("%s: Transient(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

// status503NotRetried is how internal/send ends at a 503 whose
// x-should-retry said "false".
func status503NotRetried() error {
	return StatusError("anthropic", 503, "m", &RetriesEnded{Err: &kept{}, Retryable: false})
}

func TestRetriesEndedSaysWhenTheWaitWasTooLong(t *testing.T) {
	re := &RetriesEnded{Err: errors.New("429"), Retryable: true, TooLong: true, RetryAfter: 5 * time.Minute, Room: 90 * time.Second}
	err := StatusError("anthropic", 429, "m", re)
	got, ok := WaitTooLong(err)
	if !ok || got != re {
		t.Fatalf("WaitTooLong(%v) = %v, %v; want the RetriesEnded inside", err, got, ok)
	}
	if want := "the provider asked to wait 5m0s, more than the 1m30s the retries could still wait"; re.Why() != want {
		t.Errorf("Why() = %q, want %q", re.Why(), want)
	}
	if re.Error() != "429" {
		t.Errorf("Error() = %q, want the wire's error's text unchanged", re.Error())
	}
	if _, ok := WaitTooLong(&RetriesEnded{Err: re.Err, Retryable: true}); ok {
		t.Error("WaitTooLong of retries that ended for their bound said the wait was too long")
	}
}

func TestFailureSaysWhatFailedInWords(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{StatusError("anthropic", 529, "m", &kept{}), "529 Overloaded"},
		{&WireError{Msg: "bedrock: x", Err: StatusError("anthropic", 503, "m", &kept{})}, "503 Service Unavailable"},
		{StatusError("anthropic", 200, "m", &kept{raw: `{"type":"error","error":{"type":"overloaded_error","message":"m"}}`}), "the answer's stream ended with an error event, overloaded_error"},
		{fmt.Errorf("anthropic: %w", io.ErrUnexpectedEOF), "the answer's stream broke off: anthropic: unexpected EOF"},
		{&ConnectionError{URL: "u", Attempts: 2, Err: &net.OpError{Op: "dial", Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}, Err: syscall.ECONNREFUSED}}, "connection refused by 127.0.0.1:9"},
	} {
		if got := Failure(c.err); got != c.want {
			t.Errorf("Failure(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}
