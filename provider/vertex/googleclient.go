package vertex

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/myelin-run/myelin/internal/googletoken"
	"golang.org/x/oauth2"
)

// This file is the HTTP client google.golang.org/api/transport's
// NewHTTPClient made for the wire (v0.197.0, transport/http/dial.go, with
// a token source and telemetry off), written with golang.org/x/oauth2
// alone so that the CLI does not link google.golang.org/api (which brings
// gRPC, OpenCensus, S2A and cloud.google.com/go/auth, ~100 package inits
// at every start: docs/performance.md, "Cold start").
// TestGooglesClientIsTransportsClient holds it to that client's requests.

// The variables of google.golang.org/api that chose whether its transport
// presented a client certificate (mTLS: the enterprise certificate proxy,
// SecureConnect), which this file does not do, and how it read them.
const (
	envClientCert     = "GOOGLE_API_USE_CLIENT_CERTIFICATE"
	envCertConfig     = "GOOGLE_API_CERTIFICATE_CONFIG"
	envNewAuth        = "GOOGLE_API_GO_EXPERIMENTAL_ENABLE_NEW_AUTH_LIB"
	envNewAuthOff     = "GOOGLE_API_GO_EXPERIMENTAL_DISABLE_NEW_AUTH_LIB"
	envQuotaProject   = "GOOGLE_CLOUD_QUOTA_PROJECT"
	http2PingInterval = 31 * time.Second // transport's ReadIdleTimeout
)

// transportOnly is an error that says what to do when Google's transport
// would have presented a client certificate, which googleClient does not:
// the environment asks for one, read as google.golang.org/api v0.197.0
// read it — GOOGLE_API_USE_CLIENT_CERTIFICATE "true" in any case, or,
// with its new auth library (GOOGLE_API_GO_EXPERIMENTAL_ENABLE_NEW_AUTH_LIB
// true, not turned off by GOOGLE_API_GO_EXPERIMENTAL_DISABLE_NEW_AUTH_LIB),
// any true value or the variable unset (that library's default) — and
// one is configured (certificateConfigured). nil otherwise: where the
// transport found no certificate it sent the token alone, as googleClient
// does, and the new auth library sent the same headers as the old. It is
// asked only when the wire makes its own client: with Config.HTTPClient
// given, the transport was never used and the variables never read.
func transportOnly() error {
	asked := strings.ToLower(os.Getenv(envClientCert)) == "true"
	if newAuth() {
		v, set := os.LookupEnv(envClientCert)
		on, err := strconv.ParseBool(v)
		asked = !set || (err == nil && on)
	}
	if !asked {
		return nil
	}
	where, ok := certificateConfigured()
	if !ok {
		return nil
	}
	return errors.New("vertex: a client certificate is configured (" + where + ") and " + envClientCert + " asks Google's transport to present it (mTLS), which this wire does not do: set " + envClientCert + "=false to send with the OAuth token alone, or give the wire an HTTP client (vertex.Config's HTTPClient) whose transport presents the certificate")
}

// newAuth reports whether google.golang.org/api v0.197.0 would have made
// its client with cloud.google.com/go/auth.
func newAuth() bool {
	if off, err := strconv.ParseBool(os.Getenv(envNewAuthOff)); err == nil && off {
		return false
	}
	on, err := strconv.ParseBool(os.Getenv(envNewAuth))
	return err == nil && on
}

// certificateConfigured is where the client certificate Google's
// transport would have found is configured, and whether there is one: an
// enterprise certificate proxy config naming its library (the file
// $GOOGLE_API_CERTIFICATE_CONFIG names, else gcloud's
// certificate_config.json), or SecureConnect's metadata in the home
// directory.
func certificateConfigured() (string, bool) {
	config := os.Getenv(envCertConfig)
	home, _ := os.UserHomeDir()
	if config == "" {
		if runtime.GOOS == "windows" {
			config = filepath.Join(os.Getenv("APPDATA"), "gcloud", "certificate_config.json")
		} else if home != "" {
			config = filepath.Join(home, ".config", "gcloud", "certificate_config.json")
		}
	}
	if b, err := os.ReadFile(config); config != "" && err == nil {
		var c struct {
			Libs struct {
				ECP string `json:"ecp"`
			} `json:"libs"`
		}
		if json.Unmarshal(b, &c) == nil && c.Libs.ECP != "" {
			return config, true
		}
	}
	if home != "" {
		metadata := filepath.Join(home, ".secureConnect", "context_aware_metadata.json")
		if _, err := os.Stat(metadata); err == nil {
			return metadata, true
		}
	}
	return "", false
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
	return &http.Client{Transport: &bearer{Base: rt, Source: googletoken.Source(ts)}}
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
