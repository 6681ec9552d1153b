// Package sendtest holds a wire that sends with internal/send to the SDK
// call it replaces, on loopback: one scripted server answers both calls
// alike and records what each sent, and Same compares the two — the
// requests (method, URI, host, every header, body), the number of
// attempts, and what each call made of the answers. It is for tests only;
// it must not be imported by a wire's own code.
package sendtest

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
)

// Answer is one scripted answer: a status, headers and a body.
type Answer struct {
	Status int
	Header map[string]string
	Body   string
}

// Sent is one request as the server read it.
type Sent struct {
	Method, URI, Host string
	Header            http.Header
	Body              string
}

// Server answers with its script in turn (the last answer again once it
// runs out) and records each request.
type Server struct {
	URL     string
	mu      sync.Mutex
	answers []Answer
	sent    []Sent
}

// NewServer is a Server on loopback, closed when t ends.
func NewServer(t testing.TB) *Server {
	s := &Server{}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	s.URL = hs.URL
	return s
}

// ServeHTTP records r and gives the next answer.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.sent = append(s.sent, Sent{Method: r.Method, URI: r.RequestURI, Host: r.Host, Header: r.Header.Clone(), Body: string(b)})
	a := Answer{Status: http.StatusOK}
	if len(s.answers) > 0 {
		a = s.answers[min(len(s.sent), len(s.answers))-1]
	}
	s.mu.Unlock()
	for k, v := range a.Header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(a.Status)
	_, _ = io.WriteString(w, a.Body)
}

// script starts the server over with answers and returns what it had.
func (s *Server) script(answers []Answer) []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	sent := s.sent
	s.answers, s.sent = answers, nil
	return sent
}

// Call makes one call against the server, returning what the wire made of
// the answers: the text read, or the error the wire reports.
type Call func() (string, error)

// Same runs sdk, then direct, each against answers, and fails t when they
// sent different requests, a different number of them, or made different
// results or error texts of the answers.
func Same(t testing.TB, s *Server, answers []Answer, sdk, direct Call) {
	t.Helper()
	s.script(answers)
	want, wantErr := sdk()
	viaSDK := s.script(answers)
	got, gotErr := direct()
	sent := s.script(nil)
	if len(sent) != len(viaSDK) {
		t.Fatalf("%d attempts sent directly, %d by the SDK", len(sent), len(viaSDK))
	}
	for i := range sent {
		if !reflect.DeepEqual(sent[i], viaSDK[i]) {
			t.Fatalf("attempt %d:\ndirect %+v\nSDK    %+v", i, sent[i], viaSDK[i])
		}
	}
	if got != want || (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
		t.Fatalf("direct: %q, %v\nSDK:    %q, %v", got, gotErr, want, wantErr)
	}
}

// Post is one post of a body: the SDK's call, or the Sender's.
type Post func() (*http.Response, error)

// Described is the Call of post: the answer's body read whole, or the
// error as the wire describes it joined with the error itself (whose
// text, for an SDK's error, names the request and the answer).
func Described(post Post, describe func(error) error) Call {
	return func() (string, error) {
		resp, err := post()
		if err != nil {
			if resp != nil && resp.Body != nil {
				resp.Body.Close()
			}
			return "", errors.Join(describe(err), err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
}

// Bench measures sdk and direct side by side, as sub-benchmarks of b
// named so, each post's answer read whole.
func Bench(b *testing.B, sdk, direct Post) {
	for name, post := range map[string]Post{"sdk": sdk, "direct": direct} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				resp, err := post()
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}

// OpenAIAnswers are scripts of answers for a wire on openai-go (its chat
// completions and the Responses API), each to be sent both through the
// SDK and directly (Same): successes, refusals of every shape the wires
// read, and retries (with retry-after-ms: 0, so that the SDK does not
// wait). base is the server's URL, for a redirect.
func OpenAIAnswers(base string) map[string][]Answer {
	now := map[string]string{"retry-after-ms": "0"}
	sse := map[string]string{"Content-Type": "text/event-stream"}
	return map[string][]Answer{
		"a stream":            {{Status: 200, Header: sse, Body: "data: [DONE]\n\n"}},
		"a 400":               {{Status: 400, Body: `{"error":{"message":"model not found","type":"invalid_request_error","param":null,"code":"model_not_found"}}`}},
		"too long":            {{Status: 400, Body: `{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.","code":"context_length_exceeded"}}`}},
		"an error at the top": {{Status: 400, Body: `{"object":"error","message":"maximum context length is 10 tokens","type":"BadRequestError","code":400}`}},
		"not JSON, retried":   {{Status: 502, Header: now, Body: "<html>Bad Gateway</html>"}},
		"429 then a stream":   {{Status: 429, Header: now}, {Status: 200, Header: sse, Body: "data: [DONE]\n\n"}},
		"408 409 then a 500":  {{Status: 408, Header: now}, {Status: 409, Header: now}, {Status: 500, Header: now, Body: `{"error":{"message":"down"}}`}},
		"told not to retry":   {{Status: 503, Header: map[string]string{"x-should-retry": "false"}, Body: `{"error":{"message":"no"}}`}},
		"told to retry a 400": {{Status: 400, Header: map[string]string{"x-should-retry": "true", "retry-after-ms": "0"}}, {Status: 200, Body: "ok"}},
		"a wait too long":     {{Status: 429, Header: map[string]string{"retry-after": "600"}, Body: `{"error":{"message":"slow down"}}`}},
		"a redirect in place": {{Status: 307, Header: map[string]string{"Location": base + "/v1/moved"}}, {Status: 200, Body: "moved"}},
	}
}
