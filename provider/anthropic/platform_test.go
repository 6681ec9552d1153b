package anthropic

import (
	"net/url"
	"strings"
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

func TestEditHeadCutsTheModelAndAddsTheTail(t *testing.T) {
	const tail = `,"anthropic_version":"v"`
	for _, tc := range []struct {
		name, head, tail, want string
	}{
		{"between members", `{"max_tokens":1,"model":"m","system":"s"}`, tail, `{"max_tokens":1,"system":"s","anthropic_version":"v"}`},
		{"last", `{"max_tokens":1,"model":"m"}`, tail, `{"max_tokens":1,"anthropic_version":"v"}`},
		{"first", `{"model":"m","max_tokens":1}`, tail, `{"max_tokens":1,"anthropic_version":"v"}`},
		{"alone", `{"model":"m"}`, tail, `{"anthropic_version":"v"}`},
		{"escaped value", `{"max_tokens":1,"model":"a\"b\u00e9","x":[1,{"model":"inner"}]}`, tail, `{"max_tokens":1,"x":[1,{"model":"inner"}],"anthropic_version":"v"}`},
		{"no model", `{"max_tokens":1}`, tail, `{"max_tokens":1,"anthropic_version":"v"}`},
		{"empty", `{}`, tail, `{"anthropic_version":"v"}`},
		{"no tail", `{"max_tokens":1,"model":"m"}`, "", `{"max_tokens":1}`},
		{"two members in the tail", `{"max_tokens":1,"model":"m"}`, tail + `,"anthropic_beta":["b"]`, `{"max_tokens":1,"anthropic_version":"v","anthropic_beta":["b"]}`},
	} {
		got, err := editHead([]byte(tc.head), []byte(tc.tail))
		if err != nil || string(got) != tc.want {
			t.Errorf("%s: editHead(%s) = %s, %v; want %s", tc.name, tc.head, got, err, tc.want)
		}
	}
	for _, bad := range []string{``, `[]`, `{"model":}`, `{"model":"m"`, `{"model":"m"} x`} {
		if got, err := editHead([]byte(bad), []byte(tail)); err == nil {
			t.Errorf("editHead(%s) = %s, want an error", bad, got)
		}
	}
}

func TestCheckSegmentRefusesWhatWouldNotBeThatSegment(t *testing.T) {
	for _, tc := range []struct {
		seg string
		ok  bool
	}{
		{"claude-test", true}, {"...", true}, {"a..", true}, {".a", true}, {"%2e%2e%2e", true}, {"a;b", true},
		{".", false}, {"..", false}, {".;x", false}, {"..;x", false}, {"%2E", false}, {"%2e.", false},
		{".%3Bx", false}, {"..%3b", false}, {";", false}, {";x", false}, {"%3Bx", false}, {"%3bx", false},
	} {
		if err := CheckSegment("/p/"+tc.seg, tc.seg); (err == nil) != tc.ok {
			t.Errorf("CheckSegment(%q) = %v, want ok %v", tc.seg, err, tc.ok)
		}
	}
}

func TestPathSegmentKeepsWhatRFC3986AllowsInASegment(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"claude-test", "claude-test"},
		{"us.anthropic.claude-v1:0", "us.anthropic.claude-v1:0"},
		{"a/b c%d?e#f", "a%2Fb%20c%25d%3Fe%23f"},
		{"~!$&'()*+,;=:@", "~!$&'()*+,;=:@"},
		{"é\xff", "%C3%A9%FF"},
	} {
		if got := PathSegment(tc.in); got != tc.want {
			t.Errorf("PathSegment(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzPathSegmentIsOneSegment holds PathSegment to what it promises: one
// segment that decodes back to what was escaped.
func FuzzPathSegmentIsOneSegment(f *testing.F) {
	for _, s := range []string{"claude", "a/b", "%2F", "é", "\xff", "~!$&'()*+,;=:@", "?#[]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		seg := PathSegment(s)
		if strings.ContainsAny(seg, "/?#[] ") {
			t.Fatalf("PathSegment(%q) = %q: not one segment", s, seg)
		}
		if back, err := url.PathUnescape(seg); err != nil || back != s {
			t.Fatalf("PathSegment(%q) = %q, decoding to %q (%v)", s, seg, back, err)
		}
	})
}
