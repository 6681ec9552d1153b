package anthropic

import (
	"fmt"
	"net/http"
	"os"

	"github.com/myelin-run/myelin/internal/send"
	"github.com/myelin-run/myelin/internal/stainless"
)

// The request target (method, URL, headers) of the Messages requests is
// built here by hand, as anthropic-sdk-go v2 (the release sdkVersion
// names) built it for the wire when the wire was made on its client: so
// that the binary does not link the SDK (issue 34: its package inits, its
// reflection-kept types and the libraries it brings cost ~4 ms and ~100
// page faults at every start, and 10 MB of binary). TestTheTargetIsTheSDKs
// holds the two equal, header by header, on the first-party API and on
// each platform, streamed and whole, in several environments, and
// sdkVersion to go.mod's anthropic-sdk-go.

// sdkVersion is the anthropic-sdk-go release whose requests these are:
// the User-Agent and X-Stainless-Package-Version it sends.
const sdkVersion = "2.17.0"

// apiVersion is the anthropic-version header that release sends.
const apiVersion = "2026-10-21"

// defaultBase is the first-party API's base URL when none is set.
const defaultBase = "https://api.anthropic.com/"

// wholeTimeout is the X-Stainless-Timeout a whole answer's request
// (NoStream) carries: the bound of each of its attempts (wholeAttempt,
// which the Sender keeps), in seconds, as the SDK sent it
// (TestAWholeAnswersAttemptsAreBoundAsTheirHeaderSays).
const wholeTimeout = "600"

// targetSpec is what a Messages request's target is made of.
type targetSpec struct {
	// base is the base URL the path goes under: a non-empty path gets a
	// trailing "/" (the SDK's option.WithBaseURL); "" is defaultBase.
	base string
	// authorization is the Authorization header, "" for none (a
	// platform authorizes each attempt itself).
	authorization string
	// env: the first-party environment's ANTHROPIC_CUSTOM_HEADERS apply
	// (the SDK's default client options; a platform's client was made
	// without them).
	env bool
	// noVersion leaves the anthropic-version header out (a platform that
	// takes the version in the body).
	noVersion bool
	// betas are the anthropic-beta header's values, added in order.
	betas []string
	// whole: the request asks for a whole answer (NoStream), which the
	// SDK's Messages.New gave a timeout (wholeTimeout).
	whole bool
}

// messagesTarget is the target of a Messages request as spec says: a
// POST to v1/messages under spec.base, with the headers the SDK sent —
// Accept and Content-Type (application/json), User-Agent, the
// X-Stainless-* set (lang, package version, OS, arch, runtime and its
// version, the retry count "0", the timeout of a whole answer),
// anthropic-version, the lines of ANTHROPIC_CUSTOM_HEADERS ("Name:
// value" each, with spec.env), which override any of these but
// Authorization and Content-Type, then Authorization and the betas. It
// reads the environment only with spec.env, and sends nothing.
func messagesTarget(spec targetSpec) (send.Target, error) {
	base := spec.base
	if base == "" {
		base = defaultBase
	}
	b, err := stainless.BaseURL(base)
	if err != nil {
		return send.Target{}, fmt.Errorf("anthropic: the base URL %q: %w", base, err)
	}
	u, err := b.Parse(path)
	if err != nil {
		return send.Target{}, fmt.Errorf("anthropic: the URL of %q under %q: %w", path, base, err)
	}
	h := stainless.Header("Anthropic", sdkVersion)
	h.Set("anthropic-version", apiVersion)
	if v, ok := os.LookupEnv("ANTHROPIC_CUSTOM_HEADERS"); ok && spec.env {
		stainless.CustomHeaders(h, v)
	}
	if spec.authorization != "" {
		h.Set("Authorization", spec.authorization)
	}
	h.Set("Content-Type", "application/json") // the body's, set after the environment's
	for _, beta := range spec.betas {
		h.Add("anthropic-beta", beta)
	}
	if spec.noVersion {
		h.Del("anthropic-version")
	}
	timeout := "" // none
	if spec.whole {
		timeout = wholeTimeout
	}
	stainless.SetTimeout(h, timeout)
	return send.Target{Method: http.MethodPost, URL: u, Header: h}, nil
}
