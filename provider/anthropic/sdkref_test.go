package anthropic

import (
	"context"
	"errors"
	"net/http"
	"os"
	"reflect"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/myelin-run/myelin/internal/send"
	"github.com/myelin-run/myelin/provider"
)

// This file is anthropic-sdk-go as the wire used it before it stopped
// linking the SDK: its clients made as New and NewOn made them, and the
// requests they built, which target.go builds by hand now.

// sdkClient is the SDK's client of the first-party API made as New made
// it for cfg.
func sdkClient(t testing.TB, cfg Config) sdk.Client {
	t.Helper()
	ep, err := provider.Endpoint{APIKey: cfg.APIKey, BaseURL: cfg.BaseURL, MaxRetries: cfg.MaxRetries}.
		FromEnv("Anthropic", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "")
	if err != nil {
		t.Fatal(err)
	}
	opts := []option.RequestOption{option.WithAPIKey(ep.APIKey), option.WithMaxRetries(ep.MaxRetries)}
	if ep.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(ep.BaseURL))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return sdk.NewClient(opts...)
}

// sdkPlatformClient is the SDK's client of a platform at base made as
// NewOn made it (the platform's middlewares left out: they route and
// sign each attempt, which Send and Authorize do now); with authorize, a
// platform whose options routed and an auth middleware authorized (Google
// Cloud's: no environment either).
func sdkPlatformClient(base string, cfg Config) sdk.Client {
	opts := []option.RequestOption{option.WithMaxRetries(2), option.WithoutEnvironmentDefaults(), option.WithBaseURL(base)}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	return sdk.NewClient(opts...)
}

// sdkThinkingOptions are the request options th needed besides the body.
func sdkThinkingOptions(th Thinking) []option.RequestOption {
	if th.Interleaved {
		return []option.RequestOption{option.WithHeaderAdd("anthropic-beta", InterleavedBeta)}
	}
	return nil
}

// sdkTarget is the target of the request client built for a Messages
// call asking for th: streamed (client.Post, as the wire posted through
// the SDK) or whole (client.Messages.New, as Complete did for NoStream).
func sdkTarget(t testing.TB, client sdk.Client, th Thinking, whole bool) send.Target {
	t.Helper()
	var p send.Probe
	opts := append([]option.RequestOption{option.WithRequestBody("application/json", []byte("{}"))}, sdkThinkingOptions(th)...)
	opts = append(opts, option.WithMaxRetries(0), option.WithMiddleware(p.Middleware))
	var err error
	if whole {
		_, err = client.Messages.New(context.Background(), sdk.MessageNewParams{}, opts...)
	} else {
		var resp *http.Response
		err = client.Post(context.Background(), path, nil, &resp, opts...)
	}
	target, err := p.Target(err)
	if err != nil {
		t.Fatal(err)
	}
	return target
}

// sameTarget fails t where got and want differ.
func sameTarget(t *testing.T, got, want send.Target) {
	t.Helper()
	if got.Method != want.Method || got.URL.String() != want.URL.String() || got.Host != want.Host {
		t.Errorf("%s %s (host %q), want %s %s (host %q)", got.Method, got.URL, got.Host, want.Method, want.URL, want.Host)
	}
	if !reflect.DeepEqual(got.Header, want.Header) {
		for k, v := range want.Header {
			if !reflect.DeepEqual(got.Header[k], v) {
				t.Errorf("%s: %q, want %q", k, got.Header[k], v)
			}
		}
		for k, v := range got.Header {
			if _, ok := want.Header[k]; !ok {
				t.Errorf("%s: %q, which the SDK does not send", k, v)
			}
		}
	}
}

func TestTheTargetIsTheSDKs(t *testing.T) {
	envs := map[string]map[string]string{
		"no environment":            {},
		"a base URL in the env":     {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9/env/base"},
		"custom headers":            {"ANTHROPIC_CUSTOM_HEADERS": "X-Extra: one\nX-Two:  two  \nnot a header\n"},
		"custom headers overriding": {"ANTHROPIC_CUSTOM_HEADERS": "Accept: text/plain\nUser-Agent: mine\nAuthorization: Bearer theirs\nContent-Type: text/plain\nanthropic-version: 2020-01-01\nanthropic-beta: some-beta\nX-Stainless-Retry-Count: 7"},
		"a custom timeout":          {"ANTHROPIC_CUSTOM_HEADERS": "X-Stainless-Timeout: 5"},
		"an empty custom header":    {"ANTHROPIC_CUSTOM_HEADERS": ""},
		"an auth token too":         {"ANTHROPIC_AUTH_TOKEN": "tok", "ANTHROPIC_API_KEY": "env-key"},
	}
	configs := map[string]Config{
		"the defaults":           {APIKey: "k1"},
		"a base URL":             {APIKey: "k2", BaseURL: "http://127.0.0.1:9"},
		"a base URL with a path": {APIKey: "k3", BaseURL: "http://127.0.0.1:9/proxy/anthropic"},
		"a base URL with a /":    {APIKey: "k4", BaseURL: "http://127.0.0.1:9/proxy/"},
	}
	thinkings := []Thinking{{}, {Budget: 2048}, {Budget: 2048, Interleaved: true}}
	for envName, env := range envs {
		t.Run(envName, func(t *testing.T) {
			for _, k := range []string{"ANTHROPIC_BASE_URL", "ANTHROPIC_CUSTOM_HEADERS", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_API_KEY"} {
				if v, ok := env[k]; ok {
					t.Setenv(k, v)
				} else {
					t.Setenv(k, "")
				}
			}
			for cfgName, cfg := range configs {
				for _, th := range thinkings {
					for _, whole := range []bool{false, true} {
						name := cfgName + "/" + th.String() + "/whole=" + map[bool]string{false: "no", true: "yes"}[whole]
						t.Run("first-party/"+name, func(t *testing.T) {
							cfg := cfg
							cfg.Thinking, cfg.NoStream = th, whole
							p, err := New(cfg)
							if err != nil {
								t.Fatal(err)
							}
							got := p.send.Target()
							if whole {
								got = p.whole.Target()
							}
							sameTarget(t, got, sdkTarget(t, sdkClient(t, cfg), th, whole))
						})
						t.Run("platform/"+name, func(t *testing.T) {
							for _, inBody := range []bool{false, true} {
								cfg := Config{BaseURL: cfg.BaseURL, Thinking: th, NoStream: whole}
								pl := Platform{Name: "test", Version: "test-2023", BaseURL: "https://platform.example/base",
									Send: func(*http.Request, Route) error { return nil }, BetasInBody: inBody}
								p, err := NewOn(pl, cfg)
								if err != nil {
									t.Fatal(err)
								}
								got := p.send.Target()
								if whole {
									got = p.whole.Target()
								}
								sent := th
								if inBody {
									sent = Thinking{} // in the body, not the header
								}
								want := sdkTarget(t, sdkPlatformClient(pl.BaseURL, cfg), sent, whole)
								want.Header.Del("anthropic-version") // in the body: the SDK's middleware dropped the header
								sameTarget(t, got, want)
							}
						})
						t.Run("gateway/"+name, func(t *testing.T) {
							cfg := Config{BaseURL: cfg.BaseURL, Thinking: th, NoStream: whole}
							pl := Platform{Name: "gateway", BaseURL: "https://gateway.example/v1/projects/p/invoke/",
								Authorize: func(r *http.Request) error { r.Header.Set("Authorization", "Bearer t"); return nil }}
							p, err := NewOn(pl, cfg)
							if err != nil {
								t.Fatal(err)
							}
							got := p.send.Target()
							if whole {
								got = p.whole.Target()
							}
							sameTarget(t, got, sdkTarget(t, sdkPlatformClient(pl.BaseURL, cfg), th, whole))
						})
					}
				}
			}
		})
	}
}

// The version the headers name is the anthropic-sdk-go of go.mod (the
// tests' reference): a bump of the SDK fails here until sdkVersion
// follows it, and TestTheTargetIsTheSDKs until every header does.
func TestTheSDKVersionIsGoMods(t *testing.T) {
	b, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	var version string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "github.com/anthropics/anthropic-sdk-go/v2" {
			version = f[1]
		}
	}
	if version == "" {
		t.Fatal("go.mod requires no github.com/anthropics/anthropic-sdk-go/v2")
	}
	if version != "v"+sdkVersion {
		t.Fatalf("sdkVersion is %s, go.mod's anthropic-sdk-go is %s: the headers name the SDK whose requests they copy", sdkVersion, version)
	}
}

// sdkDescribe is describe as it read the SDK's *anthropic.Error, for the
// errors of requests the SDK's client sent.
func sdkDescribe(err error) error {
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		msg := strings.TrimSpace(apiErr.RawJSON())
		if msg == "" {
			msg = err.Error()
		}
		wire := provider.StatusError("anthropic", apiErr.StatusCode, msg, err)
		if tl := tooLong(apiErr.StatusCode, apiErr.Message); tl != nil {
			tl.Err = wire
			return tl
		}
		return wire
	}
	return describe(err)
}
