package anthropic

import (
	"bytes"
	"io"
	"net/http"
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

func TestBodyVersionIsSetAtTheEndOnlyWhenAbsent(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"messages":[],"max_tokens":1}`, `{"messages":[],"max_tokens":1,"anthropic_version":"v-1"}`},
		{`{"anthropic_version":"mine","max_tokens":1}`, `{"anthropic_version":"mine","max_tokens":1}`},
		// a key of that name deeper down is not the body's
		{`{"tools":[{"input_schema":{"properties":{"anthropic_version":{}}}}]}`, `{"tools":[{"input_schema":{"properties":{"anthropic_version":{}}}}],"anthropic_version":"v-1"}`},
		{`not json`, `not json`},
	} {
		r, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/v1/messages", bytes.NewReader([]byte(tc.in)))
		var got []byte
		_, err := bodyVersion("v-1")(r, func(r *http.Request) (*http.Response, error) {
			got, _ = io.ReadAll(r.Body)
			if r.ContentLength != int64(len(got)) {
				t.Errorf("Content-Length %d for %d bytes", r.ContentLength, len(got))
			}
			return nil, nil
		})
		if err != nil || string(got) != tc.want {
			t.Errorf("%s: got %s (%v), want %s", tc.in, got, err, tc.want)
		}
	}
}

func TestAPlatformTakesNoAPIKey(t *testing.T) {
	if _, err := NewOn(Platform{Name: "bedrock"}, Config{APIKey: "sk-ant-test"}); err == nil {
		t.Fatal("an API key that would be unused was taken")
	}
}
