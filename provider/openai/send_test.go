package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/myelin-run/myelin/internal/send/sendtest"
	"github.com/myelin-run/myelin/provider"
)

func TestTheWireSendsWhatTheSDKSends(t *testing.T) {
	t.Setenv("OPENAI_ORG_ID", "org-test")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-Extra: one")
	srv := sendtest.NewServer(t)
	p, err := New(Config{APIKey: "k", BaseURL: srv.URL + "/v1", MaxRetries: 2})
	if err != nil {
		t.Fatal(err)
	}
	sdkPost, direct := posts(p, sdkClient(provider.Endpoint{APIKey: "k", BaseURL: srv.URL + "/v1", MaxRetries: 2}, nil), []byte(`{"model":"m","messages":[],"stream":true}`))
	viaSDK, viaSender := sendtest.Described(sdkPost, sdkDescribe), sendtest.Described(direct, describe)
	for name, answers := range sendtest.OpenAIAnswers(srv.URL) {
		t.Run(name, func(t *testing.T) { sendtest.Same(t, srv, answers, viaSDK, viaSender) })
	}
}

func TestTheSDKsHeadersAreSent(t *testing.T) {
	t.Setenv("OPENAI_ORG_ID", "org-test")
	srv := sendtest.NewServer(t)
	p, err := New(Config{APIKey: "k", BaseURL: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	h := p.send.Target().Header
	for name, want := range map[string]string{"Authorization": "Bearer k", "Openai-Organization": "org-test", "Content-Type": "application/json", "Accept": "application/json", "X-Stainless-Retry-Count": "0", "X-Stainless-Lang": "go"} {
		if h.Get(name) != want {
			t.Errorf("%s: %q, want %q", name, h.Get(name), want)
		}
	}
	if u := p.send.Target().URL.String(); u != srv.URL+"/v1/chat/completions" {
		t.Errorf("URL %s", u)
	}
}

// posts are the SDK's post of body through client as Complete made it
// before the Sender, and the Sender's.
func posts(p *Provider, client sdk.Client, body []byte) (sdkPost, direct sendtest.Post) {
	ctx := context.Background()
	sdkPost = func() (*http.Response, error) {
		var resp *http.Response
		err := client.Post(ctx, path, nil, &resp, option.WithRequestBody("application/json", body))
		return resp, err
	}
	return sdkPost, func() (*http.Response, error) { return p.send.Post(ctx, body) }
}

// errorMemberCases are bodies and the "error" member the SDK reads of
// each (gjson's "error" path, worked out by hand).
var errorMemberCases = map[string]string{
	`{"error":{"message":"m","code":null}}`:          `{"message":"m","code":null}`,
	`{"id":1, "error" :  {"a" : [1, 2]} , "x":2}`:    `{"a" : [1, 2]}`,
	`{"error":"plain"}`:                              `"plain"`,
	`{"error":null}`:                                 `null`,
	`{"object":"error","message":"top"}`:             ``,
	`{"nested":{"error":1}}`:                         ``,
	`[{"error":1}]`:                                  ``,
	`<html>Bad Gateway</html>`:                       ``,
	``:                                               ``,
	`{"error":{"message":"first"},"error":"second"}`: `{"message":"first"}`,
	`{"error":{"message":"cut after"},"x":`:          `{"message":"cut after"}`,
}

func TestErrorMemberIsTheSDKsErrorObject(t *testing.T) {
	for body, want := range errorMemberCases {
		if got := string(errorMember([]byte(body))); got != want {
			t.Errorf("errorMember(%s) = %s, want %s", body, got, want)
		}
	}
}

// FuzzErrorMemberIsEncodingJSONs holds errorMember, on a JSON object with
// no key twice, to the "error" member encoding/json reads of it.
func FuzzErrorMemberIsEncodingJSONs(f *testing.F) {
	for body := range errorMemberCases {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var members map[string]json.RawMessage
		if json.Unmarshal(body, &members) != nil || hasDuplicateKeys(body) {
			return
		}
		want := members["error"]
		if got := errorMember(body); !bytes.Equal(got, want) {
			t.Fatalf("errorMember(%q) = %q, encoding/json reads %q", body, got, want)
		}
	})
}

// hasDuplicateKeys reports whether the object body has a top-level key
// twice (encoding/json keeps the last, the SDK the first).
func hasDuplicateKeys(body []byte) bool {
	d := json.NewDecoder(bytes.NewReader(body))
	if _, err := d.Token(); err != nil {
		return true
	}
	seen := map[string]bool{}
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return true
		}
		var skip json.RawMessage
		if d.Decode(&skip) != nil {
			return true
		}
		key, _ := k.(string)
		if seen[key] {
			return true
		}
		seen[key] = true
	}
	return false
}

// BenchmarkPost posts one body and reads the answer through the SDK's
// request plumbing (sdk) and directly (direct), side by side on one
// loopback server: the cost the Sender takes off each request.
func BenchmarkPost(b *testing.B) {
	srv := sendtest.NewServer(b)
	p, err := New(Config{APIKey: "k", BaseURL: srv.URL + "/v1"})
	if err != nil {
		b.Fatal(err)
	}
	sdkPost, direct := posts(p, sdkClient(provider.Endpoint{APIKey: "k", BaseURL: srv.URL + "/v1", MaxRetries: provider.DefaultRetries}, nil), []byte(`{"model":"m","messages":[],"stream":true}`))
	sendtest.Bench(b, sdkPost, direct)
}

// A request for a whole answer (NoStream) goes by the Senders' Whole as
// the SDK sent it: its attempts, headers and described errors, for every
// script of answers — with RetryFor set, as the SDK sent it then, once
// (option.WithMaxRetries(0)).
func TestAWholeAnswerIsPostedAsTheSDKPostedIt(t *testing.T) {
	t.Setenv("OPENAI_PROJECT_ID", "proj-test")
	srv := sendtest.NewServer(t)
	body := []byte(`{"model":"m","messages":[]}`)
	ctx := context.Background()
	for _, retryFor := range []time.Duration{0, time.Minute} {
		p, err := New(Config{APIKey: "k", BaseURL: srv.URL + "/v1", MaxRetries: 2, NoStream: true, RetryFor: retryFor})
		if err != nil {
			t.Fatal(err)
		}
		client := sdkClient(provider.Endpoint{APIKey: "k", BaseURL: srv.URL + "/v1", MaxRetries: 2}, nil)
		var opts []option.RequestOption
		if retryFor > 0 {
			opts = append(opts, option.WithMaxRetries(0))
		}
		viaSDK := sendtest.Described(func() (*http.Response, error) {
			var resp *http.Response
			err := client.Post(ctx, path, nil, &resp, append([]option.RequestOption{option.WithRequestBody("application/json", body)}, opts...)...)
			return resp, err
		}, sdkDescribe)
		viaWhole := sendtest.Described(func() (*http.Response, error) { return p.whole.Post(ctx, body) }, describe)
		for name, answers := range sendtest.OpenAIAnswers(srv.URL) {
			t.Run(fmt.Sprintf("RetryFor %v/%s", retryFor, name), func(t *testing.T) { sendtest.Same(t, srv, answers, viaSDK, viaWhole) })
		}
	}
}
