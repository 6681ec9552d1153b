package googletoken

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/provider"
)

// The HTTP client's failures that are a configuration error, not a blip,
// are final: an https:// token_uri at a plain-HTTP port, a token_uri that
// redirects for ever (both a *url.Error, which was passing).
func TestTheHTTPClientsConfigurationErrorsAreFinal(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer plain.Close()
	var loop *httptest.Server
	loop = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, loop.URL+"/token", http.StatusTemporaryRedirect)
	}))
	defer loop.Close()
	for name, u := range map[string]string{
		"https at a plain-HTTP port": strings.Replace(plain.URL, "http://", "https://", 1) + "/token",
		"a redirect loop":            loop.URL + "/token",
	} {
		err := userToken(t, context.Background(), u)
		t.Logf("%s: final %v: %v", name, provider.IsFinal(err), err)
		if !provider.IsFinal(err) {
			t.Errorf("%s: passing", name)
		}
	}
}
