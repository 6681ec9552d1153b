package server

import (
	"net/http"
	"strings"
	"testing"
)

// goodToken is a token the server takes: 16 characters or more of
// visible ASCII.
const goodToken = "s3cret-s3cret-s3cret"

// CORS lets pages of other origins read the API's answers: without a
// token, the page of any allowed origin (any page at all with "*") would
// drive the whole API, its tools included. A server with CORS origins and
// no token refuses to serve, saying why, and runs nothing for a page.
func TestCORSWithoutATokenIsRefusedAndRunsNothing(t *testing.T) {
	for _, origins := range [][]string{{"*"}, {"https://app.example"}} {
		f := newFixture(t)
		calls := f.countingTool()
		f.srv.CORSOrigins = origins
		if err := f.srv.Check(); err == nil || !strings.Contains(err.Error(), "token") {
			t.Errorf("CORS %v without a token: Check() = %v, want an error asking for a token", origins, err)
		}
		for _, origin := range []string{"https://app.example", "https://evil.example"} {
			status, body := f.send("POST", "/v1/tools/count--run/call", "", `{}`, "Origin", origin, "Content-Type", "text/plain")
			if status != http.StatusInternalServerError || !strings.Contains(body, "--token") {
				t.Errorf("CORS %v, no token, a POST from %s: %d %s; want 500 saying a token is needed", origins, origin, status, body)
			}
		}
		if n := calls.Load(); n != 0 {
			t.Fatalf("CORS %v without a token: the tool was called %d times from a page", origins, n)
		}
		// with a token, the allowed origin's page calls the API (sending it)
		f.srv.Token = goodToken
		if err := f.srv.Check(); err != nil {
			t.Errorf("CORS %v with a token: Check() = %v", origins, err)
		}
		status, body := f.send("POST", "/v1/tools/count--run/call", "", `{}`, "Origin", "https://app.example", "Authorization", "Bearer "+goodToken)
		if status != http.StatusOK {
			t.Errorf("CORS %v with the token, from the allowed origin: %d %s", origins, status, body)
		}
	}
}

// A server with CORS for one origin still refuses a "simple" cross-site
// POST from any other (a browser sends it without a preflight, so the
// CORS headers alone would not stop it).
func TestASimpleCrossSitePostFromAnOriginNotAllowedIsRefusedWithCORSOn(t *testing.T) {
	f := newFixture(t)
	calls := f.countingTool()
	f.srv.CORSOrigins = []string{"https://app.example"}
	f.srv.Token = goodToken
	status, body := f.send("POST", "/v1/tools/count--run/call", "", `{}`, "Origin", "https://evil.example", "Content-Type", "text/plain", "Authorization", "Bearer "+goodToken)
	if status != http.StatusForbidden || !strings.Contains(body, "another origin") {
		t.Errorf("a POST from an origin not allowed: %d %s; want 403", status, body)
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("the tool was called %d times from an origin not allowed", n)
	}
}

// A token is a secret: one character, or spaces, is none. The server
// refuses a token shorter than 16 characters or with a character that is
// not visible ASCII, saying what a token must be, and serves nothing.
func TestATokenShorterThanSixteenVisibleCharactersIsRefused(t *testing.T) {
	f := newFixture(t)
	calls := f.countingTool()
	for _, tok := range []string{"t", " ", "                ", "s3cret", "0123456789abcde", "0123456789 abcdef", "0123456789abcdef\t", "0123456789abcdéf"} {
		f.srv.Token = tok
		err := f.srv.Check()
		if err == nil || !strings.Contains(err.Error(), "16") {
			t.Errorf("token %q: Check() = %v, want an error naming the 16 characters a token needs", tok, err)
		}
		status, body := f.send("POST", "/v1/tools/count--run/call", "", `{}`, "Authorization", "Bearer "+tok)
		if status != http.StatusInternalServerError || !strings.Contains(body, "16") {
			t.Errorf("token %q: a request sending it got %d %s; want 500 saying what a token must be", tok, status, body)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("the tool was called %d times on a server with a token too weak", n)
	}
	f.srv.Token = "0123456789abcdef"
	if err := f.srv.Check(); err != nil {
		t.Fatalf("a 16-character token: %v", err)
	}
}

// RFC 7235: the scheme of an Authorization header is case-insensitive,
// and one or more spaces separate it from the token.
func TestTheBearerSchemeIsCaseInsensitive(t *testing.T) {
	f := newFixture(t)
	f.srv.Token = goodToken
	for _, h := range []string{"Bearer " + goodToken, "bearer " + goodToken, "BEARER " + goodToken, "bEaReR  " + goodToken} {
		if status, body := f.send("GET", "/v1/conversations", "", "", "Authorization", h); status != http.StatusOK {
			t.Errorf("Authorization: %s: %d %s; want 200", h, status, body)
		}
	}
	for _, h := range []string{"Basic " + goodToken, "Bearer" + goodToken, "Bearer", "Bearer " + goodToken + "x", "Token " + goodToken, goodToken} {
		if status, _ := f.send("GET", "/v1/conversations", "", "", "Authorization", h); status != http.StatusUnauthorized {
			t.Errorf("Authorization: %s: %d; want 401", h, status)
		}
	}
}
