package vertex

import (
	"errors"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// This file is the HTTP client google.golang.org/api/transport's
// NewHTTPClient made for the wire (v0.197.0, transport/http/dial.go, with
// a token source and telemetry off), written with golang.org/x/oauth2
// alone so that the CLI does not link google.golang.org/api (which brings
// gRPC, OpenCensus, S2A and cloud.google.com/go/auth, ~100 package inits
// at every start: docs/performance.md, "Cold start").
// TestGooglesClientIsTransportsClient holds it to that client's requests.

// The variables of google.golang.org/api that chose what this file does
// not do: Google's client certificates (mTLS: the enterprise certificate
// proxy, SecureConnect) and its new auth library.
const (
	envClientCert     = "GOOGLE_API_USE_CLIENT_CERTIFICATE"
	envNewAuth        = "GOOGLE_API_GO_EXPERIMENTAL_ENABLE_NEW_AUTH_LIB"
	envNewAuthOff     = "GOOGLE_API_GO_EXPERIMENTAL_DISABLE_NEW_AUTH_LIB"
	envQuotaProject   = "GOOGLE_CLOUD_QUOTA_PROJECT"
	http2PingInterval = 31 * time.Second // transport's ReadIdleTimeout
)

// transportOnly is an error that says what to do when the environment
// asks Google's transport for what googleClient does not do, read as
// google.golang.org/api reads those variables: client certificates
// (GOOGLE_API_USE_CLIENT_CERTIFICATE=true) or the new auth library
// (GOOGLE_API_GO_EXPERIMENTAL_ENABLE_NEW_AUTH_LIB true, not turned off by
// GOOGLE_API_GO_EXPERIMENTAL_DISABLE_NEW_AUTH_LIB). nil otherwise. It is
// asked only when the wire makes its own client: with Config.HTTPClient
// given, the transport was never used and the variables never read.
func transportOnly() error {
	if strings.ToLower(os.Getenv(envClientCert)) == "true" {
		return errors.New("vertex: " + envClientCert + "=true asks for Google's client certificates (mTLS through the enterprise certificate proxy or SecureConnect), which this wire does not send: unset it (or set it to false) to send with the OAuth token alone, or give the wire an HTTP client (vertex.Config's HTTPClient) whose transport presents the certificate")
	}
	if off, err := strconv.ParseBool(os.Getenv(envNewAuthOff)); err == nil && off {
		return nil
	}
	if on, err := strconv.ParseBool(os.Getenv(envNewAuth)); err == nil && on {
		return errors.New("vertex: " + envNewAuth + " asks for Google's new auth library (cloud.google.com/go/auth), which this wire does not use: unset it; the credentials are the same application default credentials, found by golang.org/x/oauth2/google")
	}
	return nil
}

// googleClient is the client transport.NewHTTPClient made for ts with
// telemetry off: net/http's default transport cloned, with 100 idle
// connections kept per host and an HTTP/2 ping after 31 s without a
// frame (its ReadIdleTimeout), under the token's Authorization and, when
// $GOOGLE_CLOUD_QUOTA_PROJECT names one, the X-Goog-User-Project header
// (the only quota project the transport read for a token source: not the
// credentials file's).
func googleClient(ts oauth2.TokenSource) *http.Client {
	base, ok := http.DefaultTransport.(*http.Transport)
	var t *http.Transport
	if ok {
		t = base.Clone()
	} else {
		// a program that replaced the default transport: the transport's
		// own fallback
		t = &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:          100,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
			ForceAttemptHTTP2:     true, // the transport configured HTTP/2 on it too
		}
	}
	t.MaxIdleConnsPerHost = 100
	t.HTTP2 = &http.HTTP2Config{SendPingTimeout: http2PingInterval}
	var rt http.RoundTripper = t
	if project := os.Getenv(envQuotaProject); project != "" {
		rt = &quotaProject{base: t, project: project}
	}
	return &http.Client{Transport: &oauth2.Transport{Base: rt, Source: ts}}
}

// quotaProject sets X-Goog-User-Project on every request, on a copy of it
// (a RoundTripper must not change the request it is given).
type quotaProject struct {
	base    http.RoundTripper
	project string
}

// RoundTrip sends a copy of r carrying the header.
func (q *quotaProject) RoundTrip(r *http.Request) (*http.Response, error) {
	c := *r
	c.Header = r.Header.Clone()
	c.Header.Set("X-Goog-User-Project", q.project)
	return q.base.RoundTrip(&c)
}
