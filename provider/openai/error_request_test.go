package openai

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// An error answer's *Error hands its holder the request sent; redacting
// its header (as one does before logging it) does not change what the
// wire sends next: the request is the error's own copy, not the
// Sender's shared header.
func TestRedactingAnErrorsRequestDoesNotChangeWhatTheWireSendsNext(t *testing.T) {
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = append(auth, r.Header.Get("Authorization"))
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":{"message":"bad"}}`))
	}))
	defer srv.Close()
	p, err := New(Config{APIKey: "sk-k", BaseURL: srv.URL, NoStream: true, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Complete(context.Background(), sampleRequest(), nil)
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("err %v", err)
	}
	e.Request.Header.Del("Authorization") // redacted for a log
	e.Response.Request.Header.Del("Authorization")
	_, _ = p.Complete(context.Background(), sampleRequest(), nil)
	if len(auth) != 2 || auth[1] != "Bearer sk-k" {
		t.Fatalf("Authorization sent: %q", auth)
	}
}

// Errors of concurrent requests redacted while others are sent: each
// error's request is its own (go test -race finds a shared header
// written as others read it).
func TestErrorsOfConcurrentRequestsAreRedactedApart(t *testing.T) {
	var mu sync.Mutex
	var missing int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer sk-k" {
			mu.Lock()
			missing++
			mu.Unlock()
		}
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":{"message":"bad"}}`))
	}))
	defer srv.Close()
	p, err := New(Config{APIKey: "sk-k", BaseURL: srv.URL, NoStream: true, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 4 {
				_, err := p.Complete(context.Background(), sampleRequest(), nil)
				var e *Error
				if errors.As(err, &e) {
					e.Request.Header.Del("Authorization")
				}
			}
		})
	}
	wg.Wait()
	if missing != 0 {
		t.Fatalf("%d requests went without the Authorization header", missing)
	}
}
