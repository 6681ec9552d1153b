package send

import (
	"errors"
	"fmt"
	"net/http"
)

// ErrProbed ends an SDK's call at a Probe: the request was read, and not
// sent.
var ErrProbed = errors.New("send: the request the SDK would send was read, and not sent")

// Probe reads the request an SDK builds for a call: given to the call as
// a middleware (the SDKs' option.WithMiddleware, last of all, with no
// retries), it keeps the request that would go to the HTTP client and
// ends the call there with ErrProbed, so that the headers — the key, the
// User-Agent, the X-Stainless-* set, the version and beta headers, and any
// the SDK read from the environment — are the SDK's own, read once.
type Probe struct {
	req *http.Request
}

// Middleware keeps r and returns ErrProbed, sending nothing.
func (p *Probe) Middleware(r *http.Request, _ func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	p.req = r
	if r.Body != nil {
		_ = r.Body.Close()
	}
	return nil, ErrProbed
}

// Target is the kept request's method, URL, host and headers, or an
// error quoting err, what the probed call returned, when the call never
// reached the probe.
func (p *Probe) Target(err error) (Target, error) {
	if p.req == nil {
		return Target{}, fmt.Errorf("send: the SDK built no request: %w", err)
	}
	u := *p.req.URL
	return Target{Method: p.req.Method, URL: &u, Host: p.req.Host, Header: p.req.Header.Clone()}, nil
}
