package providertest

import (
	"net/http"
	"sync/atomic"

	"golang.org/x/oauth2"
)

// RefusedTokens is a Google token source whose every Token fails as
// golang.org/x/oauth2 fails when the token endpoint answers Status (400
// for a revoked grant, invalid_grant), counting the calls: for the wires
// that send with a Google token (vertex, googlecloud) to show how often a
// request asks for one.
type RefusedTokens struct {
	Status int
	calls  atomic.Int32
}

// Token fails with the token endpoint's answer.
func (r *RefusedTokens) Token() (*oauth2.Token, error) {
	r.calls.Add(1)
	return nil, &oauth2.RetrieveError{Response: &http.Response{StatusCode: r.Status}, ErrorCode: "invalid_grant"}
}

// Calls is how many tokens were asked for.
func (r *RefusedTokens) Calls() int32 { return r.calls.Load() }
