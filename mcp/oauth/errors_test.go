package oauth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Finding a server's authorisation server under a cancelled context says
// which GET failed, and keeps the context's error underneath.
func TestDiscoveryUnderACancelledContextWrapsContextCanceled(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	refusal := &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{}}
	_, err := discover(ctx, srv.Client(), srv.URL+"/mcp", refusal)
	if err == nil {
		t.Fatal("discovery under a cancelled context gave no error")
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("the error %q does not wrap context.Canceled", err)
	}
}
