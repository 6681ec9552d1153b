package anthropic

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/myelin-run/myelin/provider/providertest"
)

// The request an error event's error holds (an error inside a stream
// answered 200) is a copy: redacting it for a log does not take the key
// from the wire's later requests, whose first attempts share the
// Sender's header.
func TestRedactingAStreamErrorsRequestDoesNotChangeWhatTheWireSendsNext(t *testing.T) {
	var keys []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keys = append(keys, r.Header.Get("X-Api-Key")+r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"bad\"}}\n\n"))
	}))
	defer srv.Close()
	p, err := New(Config{APIKey: "test-key", BaseURL: srv.URL, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Complete(context.Background(), providertest.SampleRequest(), nil)
	var e *Error
	if !errors.As(err, &e) || e.Request == nil || e.Response == nil || e.Response.Request == nil {
		t.Fatalf("err %v", err)
	}
	e.Request.Header.Del("X-Api-Key") // redacted for a log
	e.Request.Header.Del("Authorization")
	e.Response.Request.Header.Del("X-Api-Key")
	e.Response.Request.Header.Del("Authorization")
	_, _ = p.Complete(context.Background(), providertest.SampleRequest(), nil)
	if len(keys) != 2 || keys[1] != keys[0] || keys[1] == "" {
		t.Fatalf("the key sent, first and then: %q", keys)
	}
}
