package provider

import (
	"errors"
	"fmt"
	"net/url"
	"testing"
)

func TestAFinalErrorIsNeitherTransientNorAConnectionsError(t *testing.T) {
	cause := errors.New("token refused")
	marked := Final(cause)
	if Final(nil) != nil {
		t.Error("Final(nil) is not nil")
	}
	if !errors.Is(marked, cause) || !IsFinal(fmt.Errorf("wrapped: %w", marked)) {
		t.Errorf("Final(%v) = %v: does not unwrap to its cause, or is not found wrapped", cause, marked)
	}
	if IsFinal(cause) {
		t.Error("an unmarked error is final")
	}
	// as net/http returns a transport's error
	sent := &url.Error{Op: "Post", URL: "https://example.com/v1", Err: marked}
	if got := Unanswered(sent); got != error(sent) {
		t.Errorf("Unanswered made %T of a final error: the agent would send it again", got)
	}
	if Transient(sent) || Transient(&ConnectionError{URL: "u", Err: marked}) {
		t.Error("a final error is transient")
	}
	if !Transient(&ConnectionError{URL: "u", Err: cause}) {
		t.Error("a connection's error is no longer transient")
	}
}

func TestAnUnsentErrorNeverReachedTheProvider(t *testing.T) {
	cause := errors.New("no credentials")
	if Unsent(nil) != nil {
		t.Error("Unsent(nil) is not nil")
	}
	marked := Final(Unsent(cause))
	if !errors.Is(marked, cause) || !Unconnected(marked) || !NeverReached(fmt.Errorf("wrapped: %w", marked)) {
		t.Errorf("%v: not unwrapping to its cause, or not unconnected, or reached", marked)
	}
	if NeverReached(cause) {
		t.Error("an unmarked error never reached the provider")
	}
}
