package vertex

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/user"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/oauth2"
	gapioption "google.golang.org/api/option"
	gapitransport "google.golang.org/api/transport"
)

// A variable Google's transport read, set on
// a machine with no client certificate configured (no enterprise
// certificate proxy config, no SecureConnect metadata), changed nothing
// the transport sent: it found no certificate (cert.DefaultSource: nil,
// nil) and sent with the token alone. The wire that replaced it must then
// not refuse to start: there is nothing to drop.
func TestAVariableThatChangedNothingTheTransportSentIsNotRefused(t *testing.T) {
	if u, err := user.Current(); err == nil {
		if _, err := os.Stat(filepath.Join(u.HomeDir, ".secureConnect", "context_aware_metadata.json")); err == nil {
			t.Skip("this machine has SecureConnect metadata: a client certificate is configured")
		}
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
	}{
		{name: "client certificates asked for, none configured", env: map[string]string{envClientCert: "true"}},
		{name: "client certificates asked for in capitals, none configured", env: map[string]string{envClientCert: "TRUE"}},
		{name: "the new auth library", env: map[string]string{envNewAuth: "true"}},
		{name: "the new auth library with a quota project", env: map[string]string{envNewAuth: "true", envQuotaProject: "billed"}},
		{name: "client certificates with a quota project, none configured", env: map[string]string{envClientCert: "true", envQuotaProject: "billed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			t.Setenv("HOME", home)
			// no enterprise certificate proxy config
			t.Setenv("GOOGLE_API_CERTIFICATE_CONFIG", filepath.Join(home, "absent", "certificate_config.json"))
			for _, v := range []string{envClientCert, envNewAuth, envNewAuthOff, envQuotaProject} {
				t.Setenv(v, tc.env[v])
			}
			var got []http.Header
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got = append(got, r.Header.Clone())
			}))
			defer srv.Close()
			ts := oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "ya29.test", TokenType: "Bearer"})
			theirs, _, err := gapitransport.NewHTTPClient(context.Background(), gapioption.WithTokenSource(ts), gapioption.WithTelemetryDisabled())
			if err != nil {
				t.Fatalf("Google's transport refused too: %v", err)
			}
			for _, c := range []*http.Client{theirs, googleClient(ts)} {
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/x", strings.NewReader("{}"))
				req.Header.Set("Content-Type", "application/json")
				resp, err := c.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
			}
			if len(got) != 2 || got[0].Get("Authorization") != "Bearer ya29.test" || !reflect.DeepEqual(got[0], got[1]) {
				t.Fatalf("the transport and googleClient sent different headers:\ntransport %v\nours      %v", got[0], got[1])
			}
			// the transport sent what googleClient sends: the wire must start
			if _, err := New(Config{Region: "us-east5", Project: "p", Credentials: staticToken("")}); err != nil {
				t.Fatalf("New refused a setting under which Google's transport sent exactly what googleClient sends (token only, no certificate): %v", err)
			}
		})
	}
}
