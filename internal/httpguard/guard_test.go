package httpguard

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// served is a handler that says it was reached.
var served = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("served")) })

func TestTheZeroGuardRefusesWithAJSONErrorAndServesLoopback(t *testing.T) {
	h := (&Guard{}).Wrap(served)
	for _, tc := range []struct {
		host, origin string
		status       int
		body         string
	}{
		{"evil.example.com", "", 403, `{"error":{"status":403,"message":"this server has no token, so it answers only requests for a loopback host (localhost, 127.0.0.1, [::1]), not \"evil.example.com\": give it a token (--token) to serve other names"}}` + "\n"},
		{"127.0.0.1:7", "http://a.example", 403, `{"error":{"status":403,"message":"a request from another origin (http://a.example) is refused: this server takes no cross-origin requests"}}` + "\n"},
		{"127.0.0.1:7", "http://127.0.0.1:7", 200, "served"},
		{"localhost", "", 200, "served"},
	} {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("{}"))
		r.Host = tc.host
		if tc.origin != "" {
			r.Header.Set("Origin", tc.origin)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tc.status || w.Body.String() != tc.body {
			t.Errorf("Host %q Origin %q: %d %q, want %d %q", tc.host, tc.origin, w.Code, w.Body.String(), tc.status, tc.body)
		}
	}
}

func TestOpenRequestsSkipTheOriginAndTokenChecksButNotTheHostCheck(t *testing.T) {
	g := &Guard{Token: "0123456789abcdef", Open: func(r *http.Request) bool { return r.URL.Path == "/page" }}
	h := g.Wrap(served)
	r := httptest.NewRequest(http.MethodGet, "/page", nil)
	r.Header.Set("Origin", "http://a.example")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Errorf("an open request from another origin without the token: %d %s, want 200", w.Code, w.Body)
	}
	g = &Guard{Open: func(*http.Request) bool { return true }}
	r = httptest.NewRequest(http.MethodGet, "/page", nil)
	r.Host = "evil.example.com"
	w = httptest.NewRecorder()
	g.Wrap(served).ServeHTTP(w, r)
	if w.Code != http.StatusForbidden {
		t.Errorf("an open request for another host without a token: %d %s, want 403", w.Code, w.Body)
	}
}

func TestCheckListenNeedsATokenOffLoopback(t *testing.T) {
	for _, tc := range []struct {
		addr, token, want string
	}{
		{"0.0.0.0:1", "", "--http 0.0.0.0:1 is not a loopback address: give a token"},
		{"example.com:1", "", "--http example.com:1 is not a loopback address"},
		{"0.0.0.0:1", "short", "the token is 5 character(s) long"},
		{"127.0.0.1:1", "has a space in it!", "white space"},
		{"127.0.0.1:1", "", ""},
		{"localhost:1", "", ""},
		{"[::1]:1", "", ""},
		{"0.0.0.0:1", "0123456789abcdef", ""},
	} {
		err := (&Guard{Token: tc.token}).CheckListen("--http", tc.addr)
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckListen(%q) with token %q = %v, want %q", tc.addr, tc.token, err, tc.want)
		}
	}
}
