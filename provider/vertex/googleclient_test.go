package vertex

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"
	gapioption "google.golang.org/api/option"
	gapitransport "google.golang.org/api/transport"

	"github.com/myelin-run/myelin/provider/anthropic"
)

// The client the wire makes when it is given none sends what
// google.golang.org/api/transport's client (the SDK's vertex package's,
// telemetry off) sent for the same token source: the same headers, the
// token and the quota project of GOOGLE_CLOUD_QUOTA_PROJECT included.
func TestGooglesClientIsTransportsClient(t *testing.T) {
	for _, quota := range []string{"", "billed-project"} {
		t.Run("quota project "+quota, func(t *testing.T) {
			t.Setenv(envQuotaProject, quota)
			var got []http.Header
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got = append(got, r.Header.Clone())
			}))
			defer srv.Close()
			ts := oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "ya29.test", TokenType: "Bearer"})
			theirs, _, err := gapitransport.NewHTTPClient(context.Background(), gapioption.WithTokenSource(ts), gapioption.WithTelemetryDisabled())
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []*http.Client{googleClient(ts), theirs} {
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/x", strings.NewReader("{}"))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Anthropic-Version", "2023-06-01")
				resp, err := c.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if req.Header.Get("Authorization") != "" || req.Header.Get("X-Goog-User-Project") != "" {
					t.Fatal("the client changed the request it was given")
				}
			}
			if len(got) != 2 || !reflect.DeepEqual(got[0], got[1]) {
				t.Fatalf("headers:\nours      %v\ntransport %v", got[0], got[1])
			}
			if got[0].Get("Authorization") != "Bearer ya29.test" || got[0].Get("X-Goog-User-Project") != quota {
				t.Fatalf("headers %v: want the token and the quota project %q", got[0], quota)
			}
		})
	}
}

// The client keeps the transport's connection settings: 100 idle
// connections per host, an HTTP/2 ping after 31 s without a frame.
func TestGooglesClientKeepsTheTransportsConnectionSettings(t *testing.T) {
	c := googleClient(oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "t"}))
	o, ok := c.Transport.(*oauth2.Transport)
	if !ok {
		t.Fatalf("transport %T, want the token's *oauth2.Transport", c.Transport)
	}
	base, ok := o.Base.(*http.Transport)
	if !ok {
		t.Fatalf("base %T, want an *http.Transport", o.Base)
	}
	if base.MaxIdleConnsPerHost != 100 || base.HTTP2 == nil || base.HTTP2.SendPingTimeout != 31*time.Second || !base.ForceAttemptHTTP2 {
		t.Fatalf("idle per host %d, HTTP/2 %+v, forced %v: want 100, a ping after 31s, HTTP/2 tried", base.MaxIdleConnsPerHost, base.HTTP2, base.ForceAttemptHTTP2)
	}
}

// What Google's transport did beyond a token — client certificates, the
// new auth library — is refused with an error that names the variable
// and what to do, when the wire makes its own client; with a client
// given (the transport was not used then either) and with the new
// library turned off again, nothing is refused.
func TestWhatOnlyGooglesTransportDidIsRefusedByName(t *testing.T) {
	for _, tc := range []struct {
		name        string
		env         map[string]string
		givenClient bool
		want        string // "" : no error
	}{
		{name: "client certificates", env: map[string]string{envClientCert: "true"}, want: envClientCert + "=true asks for Google's client certificates"},
		{name: "client certificates, any case", env: map[string]string{envClientCert: "TRUE"}, want: "unset it (or set it to false)"},
		{name: "client certificates off", env: map[string]string{envClientCert: "false"}},
		{name: "client certificates with a client given", env: map[string]string{envClientCert: "true"}, givenClient: true},
		{name: "the new auth library", env: map[string]string{envNewAuth: "1"}, want: envNewAuth + " asks for Google's new auth library"},
		{name: "the new auth library turned off again", env: map[string]string{envNewAuth: "true", envNewAuthOff: "true"}},
		{name: "the new auth library not asked for", env: map[string]string{envNewAuth: "false"}},
		{name: "the new auth library with a client given", env: map[string]string{envNewAuth: "true"}, givenClient: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, v := range []string{envClientCert, envNewAuth, envNewAuthOff} {
				t.Setenv(v, tc.env[v])
			}
			cfg := Config{Region: "us-east5", Project: "p", Credentials: staticToken("")}
			if tc.givenClient {
				cfg.Config = anthropic.Config{HTTPClient: &http.Client{}}
			}
			_, err := New(cfg)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}
