// Package googletoken holds the one rule for a Google access token that
// cannot be had, for the wires that send with one (provider/vertex,
// provider/googlecloud): a token the token endpoint refused — an answer
// below 500 other than 408 and 429, such as invalid_grant for a revoked
// or expired grant — or credentials that cannot give one (Broken: a bad
// key file) end the request at once (provider.Final), since sending it
// again only asks again for the same failure; anything else (the
// endpoint unreachable, a 5xx) stays an error the request is retried
// for, by the wire's sender and the agent, as a send's own blip is:
// golang.org/x/oauth2 does not retry a token's fetch itself.
//
// It must not fetch, cache or change a token, nor read a credential.
package googletoken

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"golang.org/x/oauth2"

	"github.com/myelin-run/myelin/provider"
)

// Source is ts whose refused tokens are final errors; its tokens are
// ts's, and its errors, each marked provider.Unsent (no request is
// written without a token).
func Source(ts oauth2.TokenSource) oauth2.TokenSource { return source{ts} }

type source struct{ ts oauth2.TokenSource }

func (s source) Token() (*oauth2.Token, error) {
	t, err := s.ts.Token()
	switch {
	case err == nil:
		return t, nil
	case Refused(err), Broken(err):
		return nil, provider.Final(provider.Unsent(err))
	}
	// nothing of the request is written without a token
	return nil, provider.Unsent(err)
}

// Broken reports whether err says the credentials themselves cannot
// give a token, which no attempt again mends: a service account's
// private key that cannot be read (x/oauth2's internal.ParseKey: a bad
// key file), Google's metadata server asked for off Google Cloud or for
// an account it does not have (compute/metadata's NotDefinedError), a token
// expired with nothing to refresh it, an external account's credential
// file that cannot be opened. x/oauth2 v0.36.0 says most only in words,
// which are read then. Anything else not refused (the endpoint
// unreachable, its 5xx, an error not known here) stays one to retry.
func Broken(err error) bool {
	msg := err.Error()
	if strings.Contains(msg, "metadata: GCE metadata ") && strings.Contains(msg, " not defined") {
		return true // cloud.google.com/go/compute/metadata's NotDefinedError, not imported here
	}
	for _, words := range []string{
		"private key should be a PEM or plain PKCS1 or PKCS8",
		"private key is invalid",
		"can't get a token from the metadata service; not running on GCE",
		"oauth2: token expired and refresh token is not set",
		"oauth2/google/externalaccount: failed to open credential file",
	} {
		if strings.Contains(msg, words) {
			return true
		}
	}
	return false
}

// Refused reports whether err holds the token endpoint's refusal: an
// answer below 500 that is not 408 (timeout) or 429 (too many requests).
// x/oauth2 reports most refusals as an *oauth2.RetrieveError, but those
// of workload identity federation's token exchange, of service account
// impersonation and of an external account's subject token URL only in
// their text ("oauth2/google: status code 400: ..."), which is read then.
func Refused(err error) bool {
	status, ok := 0, false
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		if re.Response == nil {
			return false // no answer to read (its Error would not say one either)
		}
		status, ok = re.Response.StatusCode, true
	} else {
		status, ok = statusInText(err.Error())
	}
	if !ok {
		return false
	}
	switch {
	case status == http.StatusRequestTimeout, status == http.StatusTooManyRequests:
		return false
	case status >= 400 && status < 500:
		return true
	}
	return false
}

// statusInText is the status x/oauth2's google package wrote into msg
// (v0.36.0: google/internal/stsexchange, google/internal/impersonate,
// google/externalaccount/urlcredsource), or a *oauth2.RetrieveError's
// text flattened into it with %v (impersonation's source credentials
// refused: "oauth2/google: unable to generate access token: ...: oauth2:
// \"invalid_grant\" ..." or "oauth2: cannot fetch token: 400 Bad
// Request"): an RFC 6749 §5.2 error code there is a refusal (400).
func statusInText(msg string) (int, bool) {
	for _, code := range []string{"invalid_request", "invalid_client", "invalid_grant", "unauthorized_client", "unsupported_grant_type", "invalid_scope"} {
		if strings.Contains(msg, `oauth2: "`+code+`"`) {
			return http.StatusBadRequest, true
		}
	}
	if i := strings.Index(msg, "oauth2: cannot fetch token: "); i >= 0 {
		rest := msg[i+len("oauth2: cannot fetch token: "):]
		if len(rest) >= 3 {
			if n, err := strconv.Atoi(rest[:3]); err == nil {
				return n, true
			}
		}
	}
	for _, prefix := range []string{"oauth2/google: status code ", "oauth2/google/externalaccount: status code "} {
		i := strings.Index(msg, prefix)
		if i < 0 {
			continue
		}
		rest := msg[i+len(prefix):]
		if len(rest) < 4 || rest[3] != ':' {
			continue
		}
		if n, err := strconv.Atoi(rest[:3]); err == nil {
			return n, true
		}
	}
	return 0, false
}
