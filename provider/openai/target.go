package openai

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/myelin-run/myelin/internal/send"
	"github.com/myelin-run/myelin/internal/stainless"
	"github.com/myelin-run/myelin/provider"
)

// The request target (method, URL, headers) a wire built on the OpenAI
// API posts to is built here by hand, as openai-go v3 (the version
// sdkVersion names) builds it for client.Post(ctx, path, nil, &res,
// option.WithRequestBody("application/json", body)) on a client made with
// option.WithAPIKey, option.WithMaxRetries and, when set,
// option.WithBaseURL: so that the binary does not link the SDK (issue 34:
// its package inits and reflection-kept union types cost ~24 MB and
// ~6 MiB of RSS at every start). TestTheTargetIsTheSDKs holds the two
// equal, header by header, for several endpoints and environments, and
// sdkVersion to go.mod's openai-go.

// sdkVersion is the openai-go release whose requests these are: the
// X-Stainless-Package-Version and User-Agent it sends.
const sdkVersion = "3.102.0"

// defaultBase is the SDK's base URL when none is set (its production
// environment).
const defaultBase = "https://api.openai.com/v1/"

// Target is where and how the requests of a wire built on the OpenAI API
// go for endpoint ep: a POST to path under ep.BaseURL (the SDK's default,
// https://api.openai.com/v1/, when empty; a base URL whose path does not
// end in "/" gets one, as the SDK's option.WithBaseURL adds it), with the
// headers openai-go sends — Authorization (Bearer ep.APIKey; without
// one, Bearer $OPENAI_ADMIN_KEY when set), Accept and
// Content-Type (application/json), User-Agent, the X-Stainless-* set
// (lang, package version, OS, arch, runtime and its version, the retry
// count "0"), OpenAI-Organization and OpenAI-Project when OPENAI_ORG_ID /
// OPENAI_PROJECT_ID are set (even empty), and the lines of
// OPENAI_CUSTOM_HEADERS ("Name: value" each), which override any of these
// but Authorization and Content-Type. An empty ep.BaseURL is
// $OPENAI_BASE_URL, else the default (the Config zero value's, and the
// SDK's but where the variable is set and empty: the SDK then posts to a
// relative URL, which fails). It reads ep and those variables only, and
// must not send anything.
func Target(ep provider.Endpoint, path string) (send.Target, error) {
	base := ep.BaseURL
	if base == "" {
		base = os.Getenv("OPENAI_BASE_URL")
	}
	if base == "" {
		base = defaultBase
	}
	b, err := stainless.BaseURL(base)
	if err != nil {
		return send.Target{}, fmt.Errorf("openai: the base URL %q: %w", base, err)
	}
	ref, err := url.Parse(path)
	if err != nil {
		return send.Target{}, fmt.Errorf("openai: the path %q: %w", path, err)
	}
	u, err := b.Parse(strings.TrimLeft(ref.String(), "/"))
	if err != nil {
		return send.Target{}, fmt.Errorf("openai: the URL of %q under %q: %w", path, base, err)
	}
	h := stainless.Header("OpenAI", sdkVersion)
	if v, ok := os.LookupEnv("OPENAI_ORG_ID"); ok {
		h.Set("OpenAI-Organization", v)
	}
	if v, ok := os.LookupEnv("OPENAI_PROJECT_ID"); ok {
		h.Set("OpenAI-Project", v)
	}
	if v, ok := os.LookupEnv("OPENAI_CUSTOM_HEADERS"); ok {
		stainless.CustomHeaders(h, v)
	}
	h.Set("Content-Type", "application/json") // the body's, set last
	// the key, set after the environment's headers: the SDK's bearer
	// auth overrides an Authorization among them; without a key, its
	// admin key's (OPENAI_ADMIN_KEY) does, and else the header stays
	if ep.APIKey != "" {
		h.Set("Authorization", "Bearer "+ep.APIKey)
	} else if admin := os.Getenv("OPENAI_ADMIN_KEY"); admin != "" {
		h.Set("Authorization", "Bearer "+admin)
	}
	stainless.SetTimeout(h, "") // no request timeout
	return send.Target{Method: http.MethodPost, URL: u, Header: h}, nil
}
