// Package googletoken holds the one rule for a Google access token that
// cannot be had, for the wires that send with one (provider/vertex,
// provider/googlecloud): a token the token endpoint refused — an answer
// below 500 other than 408 and 429, such as invalid_grant for a revoked
// or expired grant — ends the request at once (provider.Final),
// since sending it again only asks again for the same refusal; anything
// else (the endpoint unreachable, a 5xx) stays an error the request is
// retried for, as before: golang.org/x/oauth2 does not retry a token's
// fetch itself.
//
// It must not fetch, cache or change a token, nor read a credential.
package googletoken

import (
	"errors"
	"net/http"

	"github.com/myelin-run/myelin/provider"
	"golang.org/x/oauth2"
)

// Source is ts whose refused tokens are final errors; its tokens, and
// its other errors, are ts's.
func Source(ts oauth2.TokenSource) oauth2.TokenSource { return source{ts} }

type source struct{ ts oauth2.TokenSource }

func (s source) Token() (*oauth2.Token, error) {
	t, err := s.ts.Token()
	if err != nil && Refused(err) {
		return nil, provider.Final(err)
	}
	return t, err
}

// Refused reports whether err holds the token endpoint's refusal: an
// answer below 500 that is not 408 (timeout) or 429 (too many requests).
func Refused(err error) bool {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.Response == nil {
		return false
	}
	switch s := re.Response.StatusCode; {
	case s == http.StatusRequestTimeout, s == http.StatusTooManyRequests:
		return false
	case s >= 400 && s < 500:
		return true
	}
	return false
}
