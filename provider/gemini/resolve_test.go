package gemini

import (
	"context"
	"net/http"
	"os"
	"reflect"
	"testing"

	"google.golang.org/genai"
)

// The wire's address, API version and headers are those genai v1.79.1
// resolves by itself from the raw configuration and the environment (its
// key order, GOOGLE_GEMINI_BASE_URL, GOOGLE_GENAI_API_VERSION): genai is
// given only what the wire's Config said, never the wire's own resolution
// (TestTheWireSendsWhatTheSDKSends hands genai
// cfg.apiVersion(), the wire's reading of GOOGLE_GENAI_API_VERSION, so a
// wrong reading of it passes there).
func TestTheAddressVersionAndKeyAreThoseGenaiResolves(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		cfgBase, cfgVersion  string
		envBase, envVersion  string
		googleKey, geminiKey string
	}{
		{name: "both keys", googleKey: "g-key", geminiKey: "m-key"},
		{name: "gemini key only", geminiKey: "m-key"},
		{name: "env base with a path, no slash", envBase: "https://proxy.invalid/gemini", googleKey: "k"},
		{name: "env base with a path and a slash", envBase: "https://proxy.invalid/gemini/", googleKey: "k"},
		{name: "env base host only", envBase: "https://proxy.invalid", googleKey: "k"},
		{name: "env base with a port and deep path", envBase: "http://127.0.0.1:8080/a/b/", googleKey: "k"},
		{name: "config base over env base", cfgBase: "https://cfg.invalid/x", envBase: "https://proxy.invalid/gemini", googleKey: "k"},
		{name: "env version v1alpha", envVersion: "v1alpha", googleKey: "k"},
		{name: "env version beta", envVersion: "beta", googleKey: "k"},
		{name: "env version v1", envVersion: "v1", googleKey: "k"},
		{name: "config version over env", cfgVersion: "v1", envVersion: "beta", googleKey: "k"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOOGLE_GEMINI_BASE_URL", tc.envBase)
			t.Setenv("GOOGLE_GENAI_API_VERSION", tc.envVersion)
			t.Setenv("GOOGLE_API_KEY", tc.googleKey)
			t.Setenv("GEMINI_API_KEY", tc.geminiKey)
			cfg := Config{BaseURL: tc.cfgBase, APIVersion: tc.cfgVersion}
			var sent [2]*canned
			for i := range sent {
				sent[i] = &canned{ctype: "application/json", body: readFixture(t, "answer.json")}
			}
			p, err := New(Config{BaseURL: cfg.BaseURL, APIVersion: cfg.APIVersion, MaxRetries: -1, NoStream: true, HTTPClient: &http.Client{Transport: sent[0]}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Complete(context.Background(), sampleRequest(), nil); err != nil {
				t.Fatal(err)
			}
			// genai on its own: only the wire's default version (v1beta
			// where genai has v1) given when neither names one
			version := cfg.APIVersion
			if version == "" && os.Getenv("GOOGLE_GENAI_API_VERSION") == "" {
				version = DefaultAPIVersion
			}
			client, err := genai.NewClient(context.Background(), &genai.ClientConfig{Backend: genai.BackendGeminiAPI, HTTPClient: &http.Client{Transport: sent[1]},
				HTTPOptions: genai.HTTPOptions{BaseURL: cfg.BaseURL, APIVersion: version}})
			if err != nil {
				t.Fatal(err)
			}
			off := false
			_, _ = client.Models.GenerateContent(context.Background(), sampleRequest().Model, nil, &genai.GenerateContentConfig{AutomaticContinuation: &off})
			w, g := sent[0].reqs[0], sent[1].reqs[0]
			if w.URL.String() != g.URL.String() {
				t.Errorf("URL: wire %s, genai %s", w.URL, g.URL)
			}
			if !reflect.DeepEqual(w.Header, g.Header) {
				t.Errorf("headers:\nwire  %v\ngenai %v", w.Header, g.Header)
			}
		})
	}
}
