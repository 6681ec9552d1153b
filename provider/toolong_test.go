package provider

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestTooLongErrorSaysWhatTheProviderCounted(t *testing.T) {
	wire := errors.New("anthropic: 400 Bad Request: {...}")
	for _, tc := range []struct {
		err  TooLongError
		want string
	}{
		{TooLongError{Tokens: 208310, Limit: 200000, Err: wire},
			"the provider refused the request as longer than the model's context window (208310 tokens > 200000): anthropic: 400 Bad Request: {...}"},
		{TooLongError{Tokens: 199759, Output: 8192, Limit: 200000, Err: wire},
			"the provider refused the request as longer than the model's context window (199759 input tokens + 8192 for the answer > 200000): anthropic: 400 Bad Request: {...}"},
		{TooLongError{Tokens: 5000, Err: wire},
			"the provider refused the request as longer than the model's context window (5000 tokens): anthropic: 400 Bad Request: {...}"},
		{TooLongError{Limit: 8192, Err: wire},
			"the provider refused the request as longer than the model's context window (the window is 8192 tokens): anthropic: 400 Bad Request: {...}"},
		{TooLongError{Err: wire},
			"the provider refused the request as longer than the model's context window: anthropic: 400 Bad Request: {...}"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("%+v:\n got %s\nwant %s", tc.err, got, tc.want)
		}
	}
}

func TestIsTooLongFindsTheRefusalThroughWrappingAndUnwrapsToTheWiresError(t *testing.T) {
	wire := errors.New("openai: 400 Bad Request")
	err := fmt.Errorf("turn 3: %w", &TooLongError{Tokens: 9, Limit: 8, Err: wire})
	tl, ok := IsTooLong(err)
	if !ok || tl.Tokens != 9 || tl.Limit != 8 {
		t.Fatalf("IsTooLong(%v) = %+v, %v", err, tl, ok)
	}
	if !errors.Is(err, wire) {
		t.Fatal("the wire's error is not reached by errors.Is")
	}
	for _, other := range []error{nil, wire, fmt.Errorf("x: %w", context.Canceled)} {
		if tl, ok := IsTooLong(other); ok || tl != nil {
			t.Errorf("IsTooLong(%v) = %+v, %v", other, tl, ok)
		}
	}
}

type describing struct{ Provider }

func (describing) CacheSettings() string { return "fake: marks nothing" }

func TestCacheSettingsIsTheWiresWordsOrNothing(t *testing.T) {
	if got := CacheSettings(describing{}); got != "fake: marks nothing" {
		t.Fatalf("CacheSettings = %q", got)
	}
	var silent struct{ Provider }
	if got := CacheSettings(silent); got != "" {
		t.Fatalf("CacheSettings of a wire that does not say = %q", got)
	}
}
