package gemini

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
)

// The request the wire sends is the one genai's own call sent: the same
// method, URL (model path, API version, alt=sse) and headers (user agent,
// x-goog-api-client, the key, x-server-timeout from a deadline or the
// client's timeout), and the body is the wire's own.
func TestTheWireSendsWhatTheSDKSends(t *testing.T) {
	for _, tc := range []struct {
		name       string
		model      string
		apiVersion string
		env        string // GOOGLE_GENAI_API_VERSION
		base       string // Config.BaseURL; "-": none
		baseEnv    string // GOOGLE_GEMINI_BASE_URL
		noStream   bool
		deadline   time.Duration
		timeout    time.Duration
	}{
		{name: "stream", model: "gemini-2.5-flash"},
		{name: "whole", model: "gemini-2.5-flash", noStream: true},
		{name: "v1beta", model: "gemini-3-flash-preview", apiVersion: "v1beta"},
		{name: "version from the environment", model: "gemini-3-flash-preview", env: "beta"},
		{name: "a model named with models/", model: "models/gemini-2.5-pro"},
		{name: "a tuned model", model: "tunedModels/my-model-123", noStream: true},
		{name: "a deadline", model: "gemini-2.5-flash", deadline: time.Hour},
		{name: "the client's timeout", model: "gemini-2.5-flash", timeout: 90 * time.Second},
		{name: "both", model: "gemini-2.5-flash", timeout: 90 * time.Second, deadline: time.Hour, noStream: true},
		{name: "genai's default address", model: "gemini-2.5-flash", base: "-"},
		{name: "the address from the environment", model: "gemini-2.5-flash", base: "-", baseEnv: "https://proxy.invalid/gemini"},
		{name: "a base URL ending in a slash", model: "gemini-2.5-flash", base: "https://gemini.invalid/base/", noStream: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOOGLE_GENAI_API_VERSION", tc.env)
			t.Setenv("GOOGLE_GEMINI_BASE_URL", tc.baseEnv)
			ctx := context.Background()
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.deadline)
				defer cancel()
			}
			ctype := "text/event-stream"
			answer := readFixture(t, "text.sse")
			if tc.noStream {
				ctype, answer = "application/json", readFixture(t, "answer.json")
			}
			cfg := Config{APIKey: "the-key", BaseURL: "https://gemini.invalid/base", APIVersion: tc.apiVersion, MaxRetries: -1, NoStream: tc.noStream}
			switch tc.base {
			case "-":
				cfg.BaseURL = ""
			case "":
			default:
				cfg.BaseURL = tc.base
			}
			req := sampleRequest()
			req.Model = tc.model
			var sent [2]*canned
			for i := range sent {
				sent[i] = &canned{ctype: ctype, body: answer}
				hc := &http.Client{Transport: sent[i], Timeout: tc.timeout}
				var err error
				if i == 0 {
					c := cfg
					c.HTTPClient = hc
					var p *Provider
					if p, err = New(c); err != nil {
						t.Fatal(err)
					}
					_, err = p.Complete(ctx, req, nil)
				} else {
					_, err = newSDKWire(t, hc, cfg).complete(ctx, req, nil)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			wire, sdk := sent[0].reqs[0], sent[1].reqs[0]
			if wire.Method != sdk.Method || wire.URL.String() != sdk.URL.String() {
				t.Fatalf("sent %s %s, genai %s %s", wire.Method, wire.URL, sdk.Method, sdk.URL)
			}
			if !reflect.DeepEqual(wire.Header, sdk.Header) {
				t.Fatalf("headers:\nwire  %v\ngenai %v", wire.Header, sdk.Header)
			}
			if want, _ := Body(req, Options{}); !bytes.Equal(sent[0].bodies[0], want) || wire.ContentLength != int64(len(want)) {
				t.Fatal("the body sent is not the wire's own")
			}
			if !strings.HasPrefix(wire.Header.Get("User-Agent"), "google-genai-sdk/1.") {
				t.Fatalf("user agent %q", wire.Header.Get("User-Agent"))
			}
		})
	}
}

func TestABadModelNameIsAnErrorThatNamesIt(t *testing.T) {
	srv := providertest.NewGemini(t)
	p := newWire(t, srv, Config{})
	for _, model := range []string{"", "gemini?alt=json", "a&b", "../files"} {
		_, err := p.Complete(context.Background(), provider.Request{Model: model, Messages: userTurn("hi")}, nil)
		if err == nil || (model != "" && !strings.Contains(err.Error(), model)) || (model == "" && !strings.Contains(err.Error(), "no model")) {
			t.Errorf("model %q: %v", model, err)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}

// A 503 is retried, and the retry sends the same body; what follows is
// the answer.
func TestARetried503ThenSuccessGivesTheAnswer(t *testing.T) {
	srv := providertest.NewGemini(t,
		providertest.Step{Status: 503, ErrorMessage: "The model is overloaded."},
		providertest.Step{Text: "ok"},
	)
	p := newWire(t, srv, Config{MaxRetries: 1, RetryDelay: time.Millisecond})
	resp, err := p.Complete(context.Background(), provider.Request{Model: "gemini-3-flash-preview", Messages: userTurn("hi")}, nil)
	if err != nil || resp.Message.Parts[0].Text != "ok" {
		t.Fatalf("%+v, %v", resp, err)
	}
	if r := srv.Requests(); len(r) != 2 || !bytes.Equal(r[0], r[1]) {
		t.Fatalf("%d requests, or the retry's body differs", len(r))
	}
}

// A 400 is not retried, and its error keeps the provider's message.
func TestA400IsNotRetriedAndKeepsTheProvidersMessage(t *testing.T) {
	srv := providertest.NewGemini(t, providertest.Step{Status: 400, ErrorMessage: "Request contains an invalid argument."})
	p := newWire(t, srv, Config{MaxRetries: 3, RetryDelay: time.Millisecond})
	_, err := p.Complete(context.Background(), provider.Request{Model: "gemini-3-flash-preview", Messages: userTurn("hi")}, nil)
	var apiErr APIError
	if err == nil || err.Error() != "gemini: 400 Bad Request: Request contains an invalid argument. (INVALID_ARGUMENT)" || !errors.As(err, &apiErr) || apiErr.Code != 400 {
		t.Fatalf("%v", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("%d requests", n)
	}
}

// The policy retries what genai's retryHTTPRequest retries: a failure to
// send and the listed statuses, up to the attempts, the body sent whole
// each time; anything else ends it.
func TestTheRetryPolicyRetriesFailuresAndTheListedStatusesOnly(t *testing.T) {
	errDial := errors.New("dial: connection refused")
	for _, tc := range []struct {
		name     string
		attempts int
		answers  []int // 0: a failure to send
		sends    int
		status   int // of the last answer; 0: its failure
	}{
		{"a 503 then 200", 5, []int{503, 200}, 2, 200},
		{"a failure then 200", 5, []int{0, 200}, 2, 200},
		{"408, 409, 429, 500, 502, 504, 529 then 200", 8, []int{408, 409, 429, 500, 502, 504, 529, 200}, 8, 200},
		{"a 400 at once", 5, []int{400, 200}, 1, 400},
		{"a 404 at once", 5, []int{404}, 1, 404},
		{"503s up to the attempts", 3, []int{503, 503, 503, 503}, 3, 503},
		{"failures up to the attempts", 2, []int{0, 0, 0}, 2, 0},
		{"one attempt", 1, []int{503, 200}, 1, 503},
	} {
		t.Run(tc.name, func(t *testing.T) {
			policy := &retryPolicy{attempts: tc.attempts, statuses: retried}
			req, _ := http.NewRequest(http.MethodPost, "http://gemini.invalid/", strings.NewReader("the body"))
			sends := 0
			resp, err := policy.do(req, nil, func(r *http.Request) (*http.Response, error) {
				b, _ := io.ReadAll(r.Body)
				if string(b) != "the body" {
					t.Fatalf("send %d: body %q", sends+1, b)
				}
				status := tc.answers[sends]
				sends++
				if status == 0 {
					return nil, errDial
				}
				return &http.Response{StatusCode: status, Body: io.NopCloser(strings.NewReader(""))}, nil
			})
			if sends != tc.sends {
				t.Fatalf("%d sends, want %d", sends, tc.sends)
			}
			if tc.status == 0 {
				if !errors.Is(err, errDial) {
					t.Fatalf("err %v", err)
				}
				return
			}
			if err != nil || resp.StatusCode != tc.status {
				t.Fatalf("%v %v", resp, err)
			}
		})
	}
}

// The waits double from the first, plus up to the jitter, and stop
// growing at a minute.
func TestRetryWaitsDoubleFromTheFirstUpToAMinute(t *testing.T) {
	exact := &retryPolicy{initial: 1}
	for attempt, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 6: 32 * time.Second, 7: time.Minute, 20: time.Minute} {
		if got := exact.delay(attempt); got != want {
			t.Errorf("after attempt %d: %v, want %v", attempt, got, want)
		}
	}
	jittered := &retryPolicy{initial: 0.5, jitter: 1}
	for range 50 {
		if d := jittered.delay(2); d < time.Second || d > 2*time.Second {
			t.Fatalf("a wait of %v, want 1 s to 2 s", d)
		}
	}
}

// An error answer's body is read up to maxErrorBody: a proxy's page of
// any size cannot fill memory; its head is still the message.
func TestAnErrorAnswersBodyIsReadToABound(t *testing.T) {
	page := strings.Repeat("<p>bad gateway</p>", 2*maxErrorBody/18)
	resp := &http.Response{StatusCode: 502, Status: "502 Bad Gateway", Body: io.NopCloser(strings.NewReader(page))}
	err := apiError(resp)
	var apiErr APIError
	if !errors.As(err, &apiErr) || len(apiErr.Message) != maxErrorBody || !strings.HasPrefix(apiErr.Message, "<p>bad gateway</p>") {
		t.Fatalf("%d bytes of message, %v", len(apiErr.Message), err)
	}
}

func TestTheAPIVersionIsV1betaUnlessOneIsNamed(t *testing.T) {
	for _, tc := range []struct {
		name, cfg, env, want string
	}{
		{name: "default", want: "/base/v1beta/models/"},
		{name: "configured", cfg: "v1", want: "/base/v1/models/"},
		{name: "from the environment", env: "v1", want: "/base/v1/models/"},
		{name: "beta from the environment", env: "beta", want: "/base/v1beta/models/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOOGLE_GENAI_API_VERSION", tc.env)
			c := &canned{ctype: "text/event-stream", body: readFixture(t, "text.sse")}
			p, err := New(Config{APIKey: "k", BaseURL: "https://gemini.invalid/base", APIVersion: tc.cfg, MaxRetries: -1, HTTPClient: &http.Client{Transport: c}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Complete(context.Background(), sampleRequest(), nil); err != nil {
				t.Fatal(err)
			}
			if got := c.reqs[0].URL.Path; !strings.HasPrefix(got, tc.want) {
				t.Fatalf("sent to %s, want a path starting %s", got, tc.want)
			}
		})
	}
}
