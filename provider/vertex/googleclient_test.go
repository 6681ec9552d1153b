package vertex

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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
	o, ok := c.Transport.(*bearer)
	if !ok {
		t.Fatalf("transport %T, want the token's *bearer", c.Transport)
	}
	base, ok := o.Base.(*http.Transport)
	if !ok {
		t.Fatalf("base %T, want an *http.Transport", o.Base)
	}
	if base.MaxIdleConnsPerHost != 100 || base.HTTP2 == nil || base.HTTP2.SendPingTimeout != 31*time.Second || !base.ForceAttemptHTTP2 {
		t.Fatalf("idle per host %d, HTTP/2 %+v, forced %v: want 100, a ping after 31s, HTTP/2 tried", base.MaxIdleConnsPerHost, base.HTTP2, base.ForceAttemptHTTP2)
	}
}

// A client certificate Google's transport would have presented is what
// googleClient does not do: asked for and configured, it is refused by
// name; asked for with none configured (the transport then sent the token
// alone), not asked for, or with a client of the caller's, the wire
// starts. The new auth library asks for one unless told not to.
func TestAClientCertificateTheTransportWouldHavePresentedIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name        string
		env         map[string]string
		ecp         bool // an enterprise certificate proxy config naming its library
		secure      bool // SecureConnect's metadata
		givenClient bool
		refused     bool
	}{
		{name: "asked for, configured", env: map[string]string{envClientCert: "true"}, ecp: true, refused: true},
		{name: "asked for in capitals, configured", env: map[string]string{envClientCert: "TRUE"}, ecp: true, refused: true},
		{name: "asked for, SecureConnect", env: map[string]string{envClientCert: "true"}, secure: true, refused: true},
		{name: "asked for, none configured", env: map[string]string{envClientCert: "true"}},
		{name: "not asked for, configured", env: map[string]string{envClientCert: "false"}, ecp: true},
		{name: "1 is not true to the old library", env: map[string]string{envClientCert: "1"}, ecp: true},
		{name: "unset, configured", ecp: true},
		{name: "asked for, configured, a client given", env: map[string]string{envClientCert: "true"}, ecp: true, givenClient: true},
		{name: "the new auth library asks by default", env: map[string]string{envNewAuth: "true"}, ecp: true, refused: true},
		{name: "the new auth library reads 1", env: map[string]string{envNewAuth: "true", envClientCert: "1"}, ecp: true, refused: true},
		{name: "the new auth library told not to", env: map[string]string{envNewAuth: "true", envClientCert: "false"}, ecp: true},
		{name: "the new auth library, none configured", env: map[string]string{envNewAuth: "true"}},
		{name: "the new auth library turned off again", env: map[string]string{envNewAuth: "true", envNewAuthOff: "true"}, ecp: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			t.Setenv("HOME", home)
			config := filepath.Join(home, "certificate_config.json")
			t.Setenv(envCertConfig, config)
			if tc.ecp {
				if err := os.WriteFile(config, []byte(`{"cert_configs":{"workload":{}},"libs":{"ecp":"/opt/ecp/bin/ecp"}}`), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if tc.secure {
				dir := filepath.Join(home, ".secureConnect")
				if err := os.MkdirAll(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "context_aware_metadata.json"), []byte(`{}`), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			for _, v := range []string{envClientCert, envNewAuth, envNewAuthOff} {
				if val, ok := tc.env[v]; ok {
					t.Setenv(v, val)
				} else {
					t.Setenv(v, "")
					os.Unsetenv(v)
				}
			}
			cfg := Config{Region: "us-east5", Project: "p", Credentials: staticToken("")}
			if tc.givenClient {
				cfg.Config = anthropic.Config{HTTPClient: &http.Client{}}
			}
			_, err := New(cfg)
			switch {
			case !tc.refused && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.refused && (err == nil || !strings.Contains(err.Error(), "a client certificate is configured") || !strings.Contains(err.Error(), envClientCert+"=false")):
				t.Fatalf("error %v, want one saying a certificate is configured and how to send without it", err)
			}
		})
	}
}
