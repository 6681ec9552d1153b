package googletoken

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"golang.org/x/oauth2"

	"github.com/myelin-run/myelin/provider"
)

func TestOnlyATokenTheEndpointRefusedIsRefused(t *testing.T) {
	answer := func(status int) error {
		return fmt.Errorf("oauth2: cannot fetch token: %w", &oauth2.RetrieveError{Response: &http.Response{StatusCode: status}, ErrorCode: "invalid_grant"})
	}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"400 invalid_grant", answer(400), true},
		{"401", answer(401), true},
		{"403", answer(403), true},
		{"408", answer(408), false},
		{"429", answer(429), false},
		{"500", answer(500), false},
		{"503", answer(503), false},
		{"a refusal without its answer", &oauth2.RetrieveError{}, false},
		{"workload identity's exchange refused", errors.New(`oauth2/google: status code 400: {"error":"invalid_grant"}`), true},
		{"impersonation refused", fmt.Errorf("impersonate: %w", errors.New("oauth2/google: status code 403: denied")), true},
		{"a subject token URL refused", errors.New("oauth2/google/externalaccount: status code 401: no"), true},
		{"workload identity's exchange unavailable", errors.New("oauth2/google: status code 503: later"), false},
		{"workload identity's exchange throttled", errors.New("oauth2/google: status code 429: later"), false},
		{"impersonation's source refused, flattened", errors.New(`oauth2/google: unable to generate access token: Post "https://x": oauth2: "invalid_grant" "reauth related error (invalid_rapt)"`), true},
		{"a refusal without a code, flattened", errors.New("oauth2/google: unable to generate access token: oauth2: cannot fetch token: 401 Unauthorized\nResponse: {}"), true},
		{"a token endpoint's 503, flattened", errors.New("oauth2/google: unable to generate access token: oauth2: cannot fetch token: 503 Service Unavailable\nResponse: {}"), false},
		{"an unknown code, flattened", errors.New(`oauth2: "temporarily_unavailable"`), false},
		{"a status in other words", errors.New("status code 400: not x/oauth2's"), false},
		{"a status that is no number", errors.New("oauth2/google: status code 4xx: ?"), false},
		{"the endpoint unreachable", errors.New("dial tcp: connection refused"), false},
	} {
		if got := Refused(c.err); got != c.want {
			t.Errorf("%s: Refused = %v, want %v", c.name, got, c.want)
		}
	}
}

type tokens struct {
	tok *oauth2.Token
	err error
}

func (s tokens) Token() (*oauth2.Token, error) { return s.tok, s.err }

func TestSourcePassesTokensAndErrorsThrough(t *testing.T) {
	want := &oauth2.Token{AccessToken: "t"}
	if got, err := Source(tokens{tok: want}).Token(); got != want || err != nil {
		t.Errorf("Token = %v, %v; want the source's token", got, err)
	}
	refused := &oauth2.RetrieveError{Response: &http.Response{StatusCode: 400}}
	if _, err := Source(tokens{err: refused}).Token(); !errors.Is(err, refused) || !provider.IsFinal(err) || !provider.NeverReached(err) {
		t.Errorf("a refusal: %v, want it wrapped, final and never reached", err)
	}
	other := errors.New("unreachable")
	if _, err := Source(tokens{err: other}).Token(); !errors.Is(err, other) || provider.IsFinal(err) || !provider.NeverReached(err) {
		t.Errorf("another error: %v, want it wrapped, not final, never reached", err)
	}
}

// TestOnlyCredentialsThatCannotGiveATokenAreBroken: the failures no
// attempt again mends, in the words x/oauth2 v0.36.0 and
// compute/metadata v0.9.0 give them, are Broken (and final through
// Source); a token endpoint's blip or an error not known here is not.
func TestOnlyCredentialsThatCannotGiveATokenAreBroken(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"a key that is no key", errors.New("private key should be a PEM or plain PKCS1 or PKCS8; parse error: asn1: structure error"), true},
		{"a key that is not RSA", errors.New("private key is invalid"), true},
		{"the metadata server off Google Cloud", errors.New("oauth2/google: can't get a token from the metadata service; not running on GCE"), true},
		{"an account the metadata server does not have", fmt.Errorf("wrapped: %w", errors.New(`metadata: GCE metadata "instance/service-accounts/x/token" not defined`)), true},
		{"a token with nothing to refresh it", errors.New("oauth2: token expired and refresh token is not set"), true},
		{"an external account's file missing", errors.New(`oauth2/google/externalaccount: failed to open credential file "/x"`), true},
		{"the endpoint unreachable", errors.New(`Post "https://oauth2.googleapis.com/token": dial tcp: connection refused`), false},
		{"the endpoint's 503", &oauth2.RetrieveError{Response: &http.Response{StatusCode: 503}}, false},
		{"the metadata server's 503", errors.New("compute: Received 503 `busy`"), false},
		{"an error not known here", errors.New("something else"), false},
	} {
		if got := Broken(c.err); got != c.want {
			t.Errorf("%s: Broken = %v, want %v", c.name, got, c.want)
		}
		if _, err := Source(tokens{err: c.err}).Token(); provider.IsFinal(err) != (c.want || Refused(c.err)) {
			t.Errorf("%s: through Source final %v, want %v", c.name, provider.IsFinal(err), c.want)
		}
	}
}
