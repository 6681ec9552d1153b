package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// post is the error of posting to address with a client that trusts no
// certificate but the system's.
func post(t *testing.T, address string) error {
	t.Helper()
	res, err := (&http.Client{}).Post(address, "application/json", strings.NewReader("{}"))
	if err == nil {
		res.Body.Close()
		t.Fatalf("posting to %s succeeded", address)
	}
	return err
}

func TestATLSFailureIsSaidInWordsAndNeverReachedTheProvider(t *testing.T) {
	tlsSrv := httptest.NewTLSServer(http.NotFoundHandler()) // its certificate is the test's own: unknown
	defer tlsSrv.Close()
	plain := httptest.NewServer(http.NotFoundHandler())
	defer plain.Close()
	for name, c := range map[string]struct {
		address, words string
	}{
		"a certificate no one trusts": {tlsSrv.URL + "/v1/x", "TLS certificate problem: it is signed by an unknown authority"},
		"https to a plain server":     {strings.Replace(plain.URL, "http://", "https://", 1) + "/v1/x", "the TLS handshake failed: the server did not answer in TLS"},
	} {
		t.Run(name, func(t *testing.T) {
			err := post(t, c.address)
			if w := Words(err); !strings.HasPrefix(w, c.words) {
				t.Errorf("Words says %q, want it to begin %q", w, c.words)
			}
			if !Unconnected(err) || !NeverReached(Unanswered(err)) {
				t.Errorf("a failed TLS handshake sends nothing of the request: Unconnected and NeverReached should hold for %v", err)
			}
		})
	}
}

func TestUnansweredLeavesAnAnswerAndACancelAlone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1:9/v1/x?key=SECRET", nil)
	_, err := http.DefaultClient.Do(req)
	if got := Unanswered(err); got != err || NeverReached(got) {
		t.Errorf("a cancelled request should stay its own error and not read as never reached: %v", got)
	}
	other := errors.New("400 Bad Request")
	if Unanswered(other) != other || NeverReached(other) {
		t.Error("an error that is not net/http's should be left as it is")
	}
	dial := &url.Error{Op: "Post", URL: "http://127.0.0.1:9/v1/x?key=SECRET", Err: errors.New("boom")}
	if got := Unanswered(dial).Error(); got != "got no answer from http://127.0.0.1:9/v1/x: boom" {
		t.Errorf("Unanswered of a *url.Error says %q: want the URL without its query, and the cause", got)
	}
}

// TestCredentialsThatCouldNotBeHadAreSaidSo: a request whose attempt's
// authorization failed (Unsent) says it sent nothing, that the
// credentials could not be had and why — not that the provider could not
// be reached, which a token endpoint's refused connection would have
// Words say — and its notices say the same.
func TestCredentialsThatCouldNotBeHadAreSaidSo(t *testing.T) {
	token := &url.Error{Op: "Post", URL: "http://127.0.0.1:9/token", Err: errors.New("dial tcp 127.0.0.1:9: connect: connection refused")}
	err := &ConnectionError{URL: "https://example.test/v1/messages", Attempts: 2, Err: fmt.Errorf("googlecloud: failed to fetch Google access token: %w", Unsent(token))}
	want := `sent nothing to https://example.test/v1/messages after 2 attempts: could not get the credentials: Post "http://127.0.0.1:9/token": dial tcp 127.0.0.1:9: connect: connection refused`
	if got := err.Error(); got != want {
		t.Errorf("the error says\n%s\nwant\n%s", got, want)
	}
	if got := (RetryNotice{Err: err.Err}).Cause(); !strings.HasPrefix(got, "could not get the credentials: ") {
		t.Errorf("the notice's cause %q does not say the credentials could not be had", got)
	}
	page := errors.New("oauth2: cannot fetch token: 503 Service Unavailable\nResponse: <html>\n<body>busy</body></html>")
	if got, want := Words(Unsent(page)), "could not get the credentials: oauth2: cannot fetch token: 503 Service Unavailable"; got != want {
		t.Errorf("Words says %q, want %q: the token endpoint's page is no words for a notice", got, want)
	}
	if !errors.Is(err, token) || !NeverReached(err) || !Transient(err) {
		t.Errorf("errors.Is %v, NeverReached %v, Transient %v: want all", errors.Is(err, token), NeverReached(err), Transient(err))
	}
}

// TestTheCredentialsFirstLineIsCutCleanly: Words' first line of a
// credentials error closes a backtick quote the cut would leave open —
// compute/metadata's *metadata.Error writes "compute: Received 403
// `<body>`" and a body ending in a newline put the closing backtick on a
// line of its own — and says when something of the quote was left off.
func TestTheCredentialsFirstLineIsCutCleanly(t *testing.T) {
	for _, c := range []struct{ name, msg, want string }{
		{"a body ending in a newline", "compute: Received 403 `Unable to generate access token; IAM returned 403 Forbidden\n`", "compute: Received 403 `Unable to generate access token; IAM returned 403 Forbidden`"},
		{"a body of lines", "compute: Received 500 `<html>\n<body>busy</body>\n</html>`", "compute: Received 500 `<html> …`"},
		{"one line", "compute: Received 503 `busy`", "compute: Received 503 `busy`"},
		{"no quote", "oauth2: cannot fetch token: 503 Service Unavailable\nResponse: busy", "oauth2: cannot fetch token: 503 Service Unavailable"},
		{"a quote closed on the first line", "a `b` c\nmore `", "a `b` c"},
	} {
		if got, want := Words(Unsent(errors.New(c.msg))), "could not get the credentials: "+c.want; got != want {
			t.Errorf("%s: Words says %q, want %q", c.name, got, want)
		}
	}
}

// TestAnAttemptThatReachedTheProviderBeforeTheCredentialsFailedIsSaidSo:
// when an earlier attempt reached the provider and the last could not
// get its credentials, the error says both — not that the last attempt
// got no answer, as though it had been sent.
func TestAnAttemptThatReachedTheProviderBeforeTheCredentialsFailedIsSaidSo(t *testing.T) {
	err := &ConnectionError{URL: "https://example.test/v1/messages", Attempts: 3, Reached: true, Err: Unsent(errors.New("oauth2: cannot fetch token: 503 Service Unavailable"))}
	want := "got no answer from https://example.test/v1/messages after 3 attempts: the last attempt sent nothing: could not get the credentials: oauth2: cannot fetch token: 503 Service Unavailable"
	if got := err.Error(); got != want {
		t.Errorf("the error says\n%s\nwant\n%s", got, want)
	}
}
