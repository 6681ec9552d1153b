package vertex

import (
	"errors"
	"net/http"

	"golang.org/x/oauth2"

	"github.com/myelin-run/myelin/internal/googletoken"
)

// bearer is golang.org/x/oauth2's Transport (v0.36.0, transport.go) —
// each request sent on a copy of it with Source's token in its
// Authorization header — but asking Source within the request's context
// (googletoken.Within): x/oauth2's asks with none, and a token endpoint
// that takes the connection and never answers held a cancelled turn.
// It must not change the request it is given.
type bearer struct {
	Source oauth2.TokenSource
	Base   http.RoundTripper
}

// RoundTrip sends a copy of req with the token, or returns the token's
// error (req's body closed, as a RoundTripper must).
func (t *bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.Source == nil {
		closeBody(req)
		return nil, errors.New("vertex: the transport has no token source")
	}
	tok, err := googletoken.Within(req.Context(), t.Source)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	r := req.Clone(req.Context())
	tok.SetAuthHeader(r)
	return t.Base.RoundTrip(r) // the base closes the body
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}
