package anthropic

import (
	"testing"

	"github.com/myelin-run/myelin/provider"
)

func TestPlatformTooLongReadsThePlatformsWordsAndNothingElse(t *testing.T) {
	for _, tc := range []struct {
		status  int
		message string
		want    *provider.TooLongError
	}{
		{400, "The model returned the following errors: prompt is too long: 200049 tokens > 200000 maximum", &provider.TooLongError{Tokens: 200049, Limit: 200000}},
		{400, "Input is too long for requested model.", &provider.TooLongError{}},
		{400, "1 validation error detected: Value at 'body' failed to satisfy constraint: Member must have length less than or equal to 25000000", &provider.TooLongError{}},
		{413, "Prompt is too long", &provider.TooLongError{}},
		{400, "The provided model identifier is invalid.", nil},
		{429, "Input is too long for requested model.", nil}, // not a 400: not this refusal
		{400, "Malformed input request: #: extraneous key [model] is not permitted", nil},
	} {
		got := platformTooLong(tc.status, tc.message)
		if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
			t.Errorf("platformTooLong(%d, %q) = %+v, want %+v", tc.status, tc.message, got, tc.want)
		}
	}
}

func TestAPlatformTakesNoAPIKey(t *testing.T) {
	if _, err := NewOn(Platform{Name: "bedrock"}, Config{APIKey: "sk-ant-test"}); err == nil {
		t.Fatal("an API key that would be unused was taken")
	}
}
