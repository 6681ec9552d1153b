package ratelimit

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// now is when every fixture's response was read: the Date of each.
var now = time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC)

// readFixture reads testdata/name, a response as it came on the wire
// (status line, headers, body), into what a wire hands FromResponse.
func readFixture(t *testing.T, name string) (int, http.Header, []byte) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	resp, err := http.ReadResponse(bufio.NewReader(f), nil)
	if err != nil {
		t.Fatalf("fixture %s is not an HTTP response: %v", name, err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("fixture %s: reading its body: %v", name, err)
	}
	return resp.StatusCode, resp.Header, body
}

// kind is an observation's classification, compared as a whole.
type kind struct{ Limited, QuotaSpent, Overloaded, ServerFault bool }

func kindOf(o Observation) kind { return kind{o.Limited, o.QuotaSpent, o.Overloaded, o.ServerFault} }

func at(sec int) time.Time { return now.Add(time.Duration(sec) * time.Second) }

func TestFromResponseReadsWhatEachWireSays(t *testing.T) {
	for _, tc := range []struct {
		fixture, wire string
		kind          kind
		error         string
		retryAfter    time.Duration
		requests      Dimension
		tokens        Dimension
		input, output Dimension
		next          time.Time
		why           string
	}{
		{fixture: "anthropic-200.http", wire: "anthropic",
			requests: Dimension{Limit: 50, Remaining: 49, HasLimit: true, HasRemaining: true, Reset: at(1)},
			tokens:   Dimension{Limit: 38000, Remaining: 35000, HasLimit: true, HasRemaining: true, Reset: at(6)},
			input:    Dimension{Limit: 30000, Remaining: 27000, HasLimit: true, HasRemaining: true, Reset: at(6)},
			output:   Dimension{Limit: 8000, Remaining: 8000, HasLimit: true, HasRemaining: true, Reset: at(0)},
			next:     now, why: ""},
		{fixture: "anthropic-429.http", wire: "anthropic",
			kind: kind{Limited: true}, error: "rate_limit_error", retryAfter: 20 * time.Second,
			requests: Dimension{Limit: 50, Remaining: 0, HasLimit: true, HasRemaining: true, Reset: at(5)},
			tokens:   Dimension{Limit: 38000, Remaining: 8000, HasLimit: true, HasRemaining: true, Reset: at(20)},
			input:    Dimension{Limit: 30000, Remaining: 0, HasLimit: true, HasRemaining: true, Reset: at(20)},
			output:   Dimension{Limit: 8000, Remaining: 8000, HasLimit: true, HasRemaining: true, Reset: at(0)},
			next:     at(20), why: "429 from anthropic: retry after 20s"},
		{fixture: "anthropic-429-date.http", wire: "anthropic",
			kind: kind{Limited: true}, error: "rate_limit_error", retryAfter: 90 * time.Second,
			next: at(90), why: "429 from anthropic: retry after 1m30s"},
		{fixture: "anthropic-429-reset-only.http", wire: "anthropic",
			kind: kind{Limited: true}, error: "rate_limit_error",
			requests: Dimension{Limit: 50, Remaining: 0, HasLimit: true, HasRemaining: true, Reset: at(5)},
			tokens:   Dimension{Limit: 38000, Remaining: 0, HasLimit: true, HasRemaining: true, Reset: at(42)},
			next:     at(42),
			why:      "429 from anthropic; requests: 0 of 50 left until 12:00:05 UTC; tokens: 0 of 38000 left until 12:00:42 UTC"},
		{fixture: "anthropic-529.http", wire: "anthropic",
			kind: kind{Overloaded: true}, error: "overloaded_error", next: now, why: "529 from anthropic"},
		{fixture: "anthropic-500.http", wire: "anthropic",
			kind: kind{ServerFault: true}, error: "api_error", next: now, why: "500 from anthropic"},
		{fixture: "openai-200.http", wire: "openai",
			requests: Dimension{Limit: 5000, Remaining: 0, HasLimit: true, HasRemaining: true, Reset: now.Add(12 * time.Millisecond)},
			tokens:   Dimension{Limit: 160000, Remaining: 159976, HasLimit: true, HasRemaining: true, Reset: now.Add(6 * time.Minute)},
			next:     now.Add(12 * time.Millisecond), why: "requests: 0 of 5000 left until 12:00:00 UTC"},
		{fixture: "openai-429.http", wire: "openai-responses",
			kind: kind{Limited: true}, error: "rate_limit_exceeded", retryAfter: 1500 * time.Millisecond,
			requests: Dimension{Limit: 500, Remaining: 499, HasLimit: true, HasRemaining: true, Reset: now.Add(120 * time.Millisecond)},
			tokens:   Dimension{Limit: 30000, Remaining: 0, HasLimit: true, HasRemaining: true, Reset: now.Add(90*time.Second + 951*time.Millisecond)},
			next:     now.Add(1500 * time.Millisecond), why: "429 from openai-responses: retry after 1.5s"},
		{fixture: "openai-429-quota.http", wire: "openai",
			kind: kind{Limited: true, QuotaSpent: true}, error: "insufficient_quota", next: now,
			why: "429 from openai, quota spent"},
		{fixture: "openai-503.http", wire: "openai",
			kind: kind{Overloaded: true}, error: "server_error", next: now, why: "503 from openai, overloaded"},
		{fixture: "openai-502.http", wire: "openai",
			kind: kind{ServerFault: true}, next: now, why: "502 from openai"},
		{fixture: "gemini-429.http", wire: "gemini",
			kind: kind{Limited: true}, error: "RESOURCE_EXHAUSTED", retryAfter: 20 * time.Second,
			next: at(20), why: "429 from gemini: retry after 20s"},
		{fixture: "gemini-429-stream.http", wire: "gemini",
			kind: kind{Limited: true}, error: "RESOURCE_EXHAUSTED", retryAfter: 1500 * time.Millisecond,
			next: now.Add(1500 * time.Millisecond), why: "429 from gemini: retry after 1.5s"},
		{fixture: "gemini-503.http", wire: "gemini",
			kind: kind{Overloaded: true}, error: "UNAVAILABLE", next: now, why: "503 from gemini, overloaded"},
		{fixture: "vertex-429.http", wire: "vertex",
			kind: kind{Limited: true}, error: "RESOURCE_EXHAUSTED", next: now, why: "429 from vertex"},
		{fixture: "vertex-529.http", wire: "vertex",
			kind: kind{Overloaded: true}, error: "overloaded_error", next: now, why: "529 from vertex"},
		{fixture: "google-cloud-429.http", wire: "google-cloud",
			kind: kind{Limited: true}, error: "rate_limit_error", retryAfter: 7 * time.Second,
			output: Dimension{Limit: 8000, Remaining: 0, HasLimit: true, HasRemaining: true, Reset: at(7)},
			next:   at(7), why: "429 from google-cloud: retry after 7s"},
		{fixture: "bedrock-429.http", wire: "bedrock",
			kind: kind{Limited: true}, error: "ThrottlingException", next: now, why: "429 from bedrock"},
		{fixture: "bedrock-503.http", wire: "bedrock",
			kind: kind{Overloaded: true}, error: "ServiceUnavailableException", next: now, why: "503 from bedrock, overloaded"},
		{fixture: "bedrock-model-not-ready.http", wire: "bedrock",
			kind: kind{Overloaded: true}, error: "ModelNotReadyException", next: now, why: "429 from bedrock, overloaded"},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			status, h, body := readFixture(t, tc.fixture)
			o := FromResponse(tc.wire, status, h, body, now)
			if o.Status != status || o.From != tc.wire || !o.At.Equal(now) {
				t.Errorf("status, from, at = %d, %q, %v; want %d, %q, %v", o.Status, o.From, o.At, status, tc.wire, now)
			}
			if got := kindOf(o); got != tc.kind {
				t.Errorf("kind = %+v, want %+v", got, tc.kind)
			}
			if o.Error != tc.error {
				t.Errorf("error = %q, want %q", o.Error, tc.error)
			}
			if o.RetryAfter != tc.retryAfter {
				t.Errorf("retry after = %v, want %v", o.RetryAfter, tc.retryAfter)
			}
			for _, d := range []struct {
				name      string
				got, want Dimension
			}{{"requests", o.Requests, tc.requests}, {"tokens", o.Tokens, tc.tokens}, {"input tokens", o.InputTokens, tc.input}, {"output tokens", o.OutputTokens, tc.output}} {
				if !sameDimension(d.got, d.want) {
					t.Errorf("%s = %+v, want %+v", d.name, d.got, d.want)
				}
			}
			if got := o.Next(now); !got.Equal(tc.next) {
				t.Errorf("next = %v, want %v", got, tc.next)
			}
			if got, want := o.Wait(now), tc.next.Sub(now); got != want {
				t.Errorf("wait = %v, want %v", got, want)
			}
			if got := o.Why(); got != tc.why {
				t.Errorf("why = %q, want %q", got, tc.why)
			}
		})
	}
}

func sameDimension(a, b Dimension) bool {
	return a.Limit == b.Limit && a.Remaining == b.Remaining && a.HasLimit == b.HasLimit &&
		a.HasRemaining == b.HasRemaining && a.Reset.Equal(b.Reset)
}

// An error event read from inside a stream (the stream's status long
// sent) is read by its body alone.
func TestAStreamsErrorEventIsReadByItsBody(t *testing.T) {
	body, err := os.ReadFile(filepath.Join("testdata", "anthropic-stream-error.json"))
	if err != nil {
		t.Fatal(err)
	}
	o := FromResponse("anthropic", 0, nil, body, now)
	if !o.Overloaded || o.Limited || o.ServerFault {
		t.Errorf("kind = %+v, want overloaded only", kindOf(o))
	}
	if got, want := o.Why(), "overloaded_error from anthropic, overloaded"; got != want {
		t.Errorf("why = %q, want %q", got, want)
	}
}

// Header names are read however the map's keys are cased: canonical (as
// net/http reads and Set writes them) or as they came (HTTP/2's lower
// case, a map built by hand), which http.Header.Get alone would miss.
func TestHeadersAreReadInBothCasings(t *testing.T) {
	canonical := http.Header{}
	canonical.Set("Retry-After", "3")
	canonical.Set("Anthropic-Ratelimit-Requests-Remaining", "0")
	canonical.Set("X-Ratelimit-Limit-Tokens", "100")
	lower := http.Header{
		"retry-after":                            {"3"},
		"anthropic-ratelimit-requests-remaining": {"0"},
		"x-ratelimit-limit-tokens":               {"100"},
	}
	mixed := http.Header{
		"RETRY-AFTER":                            {"3"},
		"Anthropic-RateLimit-Requests-Remaining": {"0"},
		"x-RateLimit-limit-tokens":               {"100"},
	}
	for name, h := range map[string]http.Header{"canonical": canonical, "lower": lower, "mixed": mixed} {
		o := FromResponse("anthropic", 429, h, nil, now)
		if o.RetryAfter != 3*time.Second {
			t.Errorf("%s: retry after = %v, want 3s", name, o.RetryAfter)
		}
		if !o.Requests.HasRemaining || o.Requests.Remaining != 0 {
			t.Errorf("%s: requests = %+v, want 0 remaining", name, o.Requests)
		}
		if !o.Tokens.HasLimit || o.Tokens.Limit != 100 {
			t.Errorf("%s: tokens = %+v, want a limit of 100", name, o.Tokens)
		}
	}
}

// A value that cannot be read is taken as unsaid — never as 0, never a
// panic — and a wait beyond MaxWait is MaxWait.
func TestMalformedAndAbsurdValuesAreUnsaidOrBounded(t *testing.T) {
	for _, tc := range []struct {
		name       string
		h          http.Header
		retryAfter time.Duration
		requests   Dimension
		next       time.Time
	}{
		{name: "no headers", h: nil, next: now},
		{name: "retry-after not a number", h: http.Header{"Retry-After": {"soon"}}, next: now},
		{name: "retry-after negative", h: http.Header{"Retry-After": {"-5"}}, next: now},
		{name: "retry-after NaN", h: http.Header{"Retry-After": {"NaN"}}, next: now},
		{name: "retry-after Inf", h: http.Header{"Retry-After": {"+Inf"}}, next: now},
		{name: "retry-after overflowing", h: http.Header{"Retry-After": {"1e400"}}, next: now},
		{name: "retry-after absurd", h: http.Header{"Retry-After": {"99999999999999999"}},
			retryAfter: MaxWait, next: now.Add(MaxWait)},
		{name: "retry-after a fraction", h: http.Header{"Retry-After": {"0.25"}},
			retryAfter: 250 * time.Millisecond, next: now.Add(250 * time.Millisecond)},
		{name: "retry-after zero", h: http.Header{"Retry-After": {"0"}}, next: now},
		{name: "retry-after a date past", h: http.Header{"Retry-After": {"Thu, 15 Jan 2026 11:00:00 GMT"}}, next: now},
		{name: "retry-after a date in a hundred years", h: http.Header{"Retry-After": {"Mon, 15 Jan 2126 12:00:00 GMT"}},
			retryAfter: MaxWait, next: now.Add(MaxWait)},
		{name: "retry-after an RFC 850 date", h: http.Header{"Retry-After": {"Thursday, 15-Jan-26 12:00:10 GMT"}},
			retryAfter: 10 * time.Second, next: at(10)},
		{name: "retry-after-ms malformed falls to retry-after", h: http.Header{"Retry-After-Ms": {"fast"}, "Retry-After": {"4"}},
			retryAfter: 4 * time.Second, next: at(4)},
		{name: "retry-after-ms negative falls to retry-after", h: http.Header{"Retry-After-Ms": {"-100"}, "Retry-After": {"4"}},
			retryAfter: 4 * time.Second, next: at(4)},
		{name: "count not a number", h: http.Header{"Anthropic-Ratelimit-Requests-Remaining": {"zero"}, "Anthropic-Ratelimit-Requests-Limit": {"5.5"}}, next: now},
		{name: "count negative", h: http.Header{"X-Ratelimit-Remaining-Requests": {"-1"}}, next: now},
		{name: "reset malformed", h: http.Header{"Anthropic-Ratelimit-Requests-Remaining": {"0"}, "Anthropic-Ratelimit-Requests-Reset": {"tomorrow"}},
			requests: Dimension{HasRemaining: true}, next: now},
		{name: "reset far off", h: http.Header{"Anthropic-Ratelimit-Requests-Remaining": {"0"}, "Anthropic-Ratelimit-Requests-Reset": {"9999-12-31T23:59:59Z"}},
			requests: Dimension{HasRemaining: true, Reset: now.Add(MaxWait)}, next: now.Add(MaxWait)},
		{name: "reset past", h: http.Header{"Anthropic-Ratelimit-Requests-Remaining": {"0"}, "Anthropic-Ratelimit-Requests-Reset": {"2026-01-15T11:59:00Z"}},
			requests: Dimension{HasRemaining: true, Reset: now.Add(-time.Minute)}, next: now},
		{name: "openai reset negative", h: http.Header{"X-Ratelimit-Remaining-Requests": {"0"}, "X-Ratelimit-Reset-Requests": {"-1s"}},
			requests: Dimension{HasRemaining: true}, next: now},
		{name: "openai reset in bare seconds", h: http.Header{"X-Ratelimit-Remaining-Requests": {"0"}, "X-Ratelimit-Reset-Requests": {"2.5"}},
			requests: Dimension{HasRemaining: true, Reset: now.Add(2500 * time.Millisecond)}, next: now.Add(2500 * time.Millisecond)},
		{name: "openai reset absurd", h: http.Header{"X-Ratelimit-Remaining-Requests": {"0"}, "X-Ratelimit-Reset-Requests": {"2000000h"}},
			requests: Dimension{HasRemaining: true, Reset: now.Add(MaxWait)}, next: now.Add(MaxWait)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := FromResponse("anthropic", 200, tc.h, nil, now)
			if o.RetryAfter != tc.retryAfter {
				t.Errorf("retry after = %v, want %v", o.RetryAfter, tc.retryAfter)
			}
			if !sameDimension(o.Requests, tc.requests) {
				t.Errorf("requests = %+v, want %+v", o.Requests, tc.requests)
			}
			if got := o.Next(now); !got.Equal(tc.next) {
				t.Errorf("next = %v, want %v", got, tc.next)
			}
			if w := o.Wait(now); w < 0 || w > MaxWait {
				t.Errorf("wait = %v, want within [0, MaxWait]", w)
			}
		})
	}
}

// A body that is not an error of any wire — not JSON, an error that is a
// string, details of the wrong shape, an answer — names nothing, and the
// status alone classifies the response.
func TestBodiesThatAreNoWiresErrorNameNothing(t *testing.T) {
	for _, body := range []string{
		``, `not json`, `{"error":"Too Many Requests"}`, `{"error":{"type":42}}`,
		`{"error":{"status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":{"seconds":20}}]}}`,
		`{"error":{"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"-3s"}]}}`,
		`[]`, `[1]`, `{"id":"msg_01","type":"message","content":[]}`, `{`,
		`{"pad":"` + strings.Repeat("x", maxBody) + `","type":"error","error":{"type":"overloaded_error"}}`,
	} {
		o := FromResponse("gemini", 200, nil, []byte(body), now)
		if o.RetryAfter != 0 || o.Overloaded || o.ServerFault {
			t.Errorf("body %.60q: retry after %v, kind %+v; want nothing", body, o.RetryAfter, kindOf(o))
		}
	}
	// A status still says what the body does not.
	if o := FromResponse("gemini", 429, nil, []byte(`not json`), now); !o.Limited {
		t.Errorf("a 429 with a body that is not JSON: kind %+v, want limited", kindOf(o))
	}
}

// Bedrock's error type is read from its header, and from a body's __type
// as AWS's JSON protocols write it, by its last name either way.
func TestBedrocksErrorTypeIsReadByItsName(t *testing.T) {
	for _, tc := range []struct {
		h    http.Header
		body string
	}{
		{http.Header{"X-Amzn-Errortype": {"ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/"}}, `{"message":"Too many tokens, please wait before trying again."}`},
		{http.Header{"X-Amzn-Errortype": {"ThrottlingException"}}, ``},
		{nil, `{"__type":"com.amazon.bedrock.runtime#ThrottlingException","message":"Your request rate is too high."}`},
	} {
		o := FromResponse("bedrock", 400, tc.h, []byte(tc.body), now)
		if o.Error != "ThrottlingException" || !o.Limited {
			t.Errorf("headers %v, body %q: error %q, kind %+v; want ThrottlingException, limited", tc.h, tc.body, o.Error, kindOf(o))
		}
	}
}

// A wait asked for in a header is the wait, even 0; Gemini's RetryInfo is
// read only when no header said one.
func TestAHeadersRetryAfterComesBeforeTheBodys(t *testing.T) {
	body := []byte(`{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"20s"}]}}`)
	for _, tc := range []struct {
		h    http.Header
		want time.Duration
	}{
		{nil, 20 * time.Second},
		{http.Header{"Retry-After": {"3"}}, 3 * time.Second},
		{http.Header{"Retry-After": {"0"}}, 0},
		{http.Header{"Retry-After": {"garbage"}}, 20 * time.Second},
	} {
		if got := FromResponse("gemini", 429, tc.h, body, now).RetryAfter; got != tc.want {
			t.Errorf("headers %v: retry after = %v, want %v", tc.h, got, tc.want)
		}
	}
}

// Whatever a response holds, reading it does not panic and asks for a wait
// within [0, MaxWait]. Its seeds are every fixture's headers and body; go
// test runs them, go test -fuzz FuzzFromResponse ./ratelimit looks further.
func FuzzFromResponse(f *testing.F) {
	entries, err := os.ReadDir("testdata")
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join("testdata", e.Name()))
		if err != nil {
			f.Fatal(err)
		}
		head, body, _ := strings.Cut(string(raw), "\n\n")
		f.Add(429, head, body)
	}
	f.Fuzz(func(t *testing.T, status int, head, body string) {
		h := http.Header{}
		for _, line := range strings.Split(head, "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok {
				h[k] = append(h[k], v)
			}
		}
		o := FromResponse("anthropic", status, h, []byte(body), now)
		if w := o.Wait(now); w < 0 || w > MaxWait {
			t.Errorf("wait = %v, want within [0, MaxWait]", w)
		}
		_ = o.Why()
	})
}
