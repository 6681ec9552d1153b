// Package vertex is Claude on Google Vertex AI: the Anthropic Messages
// wire (provider/anthropic: its encoder, cache markers and reading of the
// answer) posted to the publisher model's rawPredict (whole answer) or
// streamRawPredict (server-sent events) under
// /v1/projects/PROJECT/locations/REGION/publishers/anthropic/models/MODEL,
// with a Google OAuth token from application default credentials
// (golang.org/x/oauth2/google).
//
// The body is the first-party wire's, byte for byte, less "model" (the
// URL says it) and with "anthropic_version":"vertex-2023-10-16" at its
// end, the value the documentation of Claude on Vertex AI requires. The
// wire writes that body itself (provider/anthropic's Platform.Send), and
// sends it through the HTTP client anthropic-sdk-go's vertex package
// would (Google's, authorized by the credentials' token source): the
// bytes, URL and headers sent are those that package's middleware made of
// the first-party request (TestWhatIsSentIsWhatTheSDKsMiddlewareSent),
// without its passes over the body. That client is written here
// (googleclient.go), not taken from google.golang.org/api, which linked
// gRPC, OpenCensus and S2A into every start of the CLI; what Google's
// client did beyond the token — presenting a client certificate
// configured on the machine — is refused with an error saying so. Prompt caching is the
// first-party wire's cache_control markers, which Vertex takes. It must
// not read or send an Anthropic API key.
package vertex

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"github.com/myelin-run/myelin/internal/googletoken"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
)

// Version is the anthropic_version sent in the body: the one the
// documentation of Claude on Vertex AI requires.
const Version = "vertex-2023-10-16"

// scope is the OAuth scope of the credentials found by default.
const scope = "https://www.googleapis.com/auth/cloud-platform"

// Config configures the wire on Vertex AI. The zero value reads the
// region from CLOUD_ML_REGION, the project from
// ANTHROPIC_VERTEX_PROJECT_ID (else GOOGLE_CLOUD_PROJECT, GCLOUD_PROJECT,
// else the project of the application default credentials), the address
// from ANTHROPIC_VERTEX_BASE_URL when set — the variables Anthropic's SDKs
// and Claude Code read — and the credentials from Google's application
// default credentials (GOOGLE_APPLICATION_CREDENTIALS, gcloud's
// application-default login, the metadata server).
type Config struct {
	// Config is the wire's own settings, as on the first-party API: its
	// BaseURL, when set, replaces the address (the regional
	// https://REGION-aiplatform.googleapis.com/, or
	// $ANTHROPIC_VERTEX_BASE_URL) for a proxy or a test's fake, and its
	// path must be empty, the wire rewriting /v1/messages only; NoStream
	// calls rawPredict, the answer then arriving whole; MaxRetries and
	// HTTPClient as there. Its APIKey must stay empty.
	anthropic.Config
	Region  string // "us-east5", "europe-west1", "global", ...; default $CLOUD_ML_REGION
	Project string // the Google Cloud project ID; default as Config says
	// Credentials, when set, are used instead of the application default
	// credentials (a test passes a static token source here).
	Credentials *google.Credentials
}

// New returns the wire, or an error that names what to set: the region,
// the project, or credentials that could not be found.
func New(cfg Config) (*anthropic.OnPlatform, error) {
	region := first(cfg.Region, os.Getenv("CLOUD_ML_REGION"))
	if region == "" {
		return nil, errors.New("vertex: no region: set CLOUD_ML_REGION (us-east5, europe-west1, global, ...)")
	}
	// the application default credentials' token requests end after
	// googletoken.AskTimeout: a token endpoint that never answers must
	// not hold the token source's lock for ever (a caller's Credentials
	// keep their own client)
	ctx := googletoken.Context(context.Background())
	creds := cfg.Credentials
	if creds == nil {
		found, err := google.FindDefaultCredentials(ctx, scope)
		if err != nil {
			return nil, fmt.Errorf("vertex: no Google credentials (run `gcloud auth application-default login` or set GOOGLE_APPLICATION_CREDENTIALS): %w", err)
		}
		creds = found
	}
	project := first(cfg.Project, os.Getenv("ANTHROPIC_VERTEX_PROJECT_ID"), os.Getenv("GOOGLE_CLOUD_PROJECT"), os.Getenv("GCLOUD_PROJECT"), creds.ProjectID)
	if project == "" {
		return nil, errors.New("vertex: no Google Cloud project: set ANTHROPIC_VERTEX_PROJECT_ID")
	}
	wire := cfg.Config
	base, err := hostOnly(first(wire.BaseURL, os.Getenv("ANTHROPIC_VERTEX_BASE_URL")))
	if err != nil {
		return nil, err
	}
	wire.BaseURL = base
	client, err := authorized(cfg.HTTPClient, creds)
	if err != nil {
		return nil, err
	}
	return anthropic.NewOn(anthropic.Platform{
		Name:       "vertex",
		Version:    Version,
		BaseURL:    regionalURL(region),
		HTTPClient: client,
		Send:       newRoute(region, project).send,
		// the rate limiter's key (docs/ratelimits.md, "Platforms"):
		// Vertex's quotas are a project's, per region and model
		Identity: "gcp:" + project + "/" + region,
	}, wire)
}

// regionalURL is the address of Vertex AI for region, as the SDK's vertex
// package has it.
func regionalURL(region string) string {
	switch region {
	case "global":
		return "https://aiplatform.googleapis.com/"
	case "us":
		return "https://aiplatform.us.rep.googleapis.com/"
	case "eu":
		return "https://aiplatform.eu.rep.googleapis.com/"
	}
	return "https://" + region + "-aiplatform.googleapis.com/"
}

// authorized is the HTTP client that sends with creds' tokens, as the
// SDK's vertex package makes it: a copy of client whose transport adds
// the token (client's other settings kept, client itself untouched), or,
// without one, Google's own HTTP client for the token source (googleClient)
// without Google's telemetry: that client otherwise wraps every request in
// an OpenCensus and an OpenTelemetry transport, which add an
// X-Cloud-Trace-Context header naming a new random trace each time and
// cost ~35 µs a round (docs/overhead.md), for tracing myelin does not
// configure.
func authorized(client *http.Client, creds *google.Credentials) (*http.Client, error) {
	if client == nil || client == http.DefaultClient {
		if err := transportOnly(); err != nil {
			return nil, err
		}
		return googleClient(creds.TokenSource), nil
	}
	base := client.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	if t, ok := base.(*oauth2.Transport); ok && t.Source == creds.TokenSource {
		return client, nil
	}
	wrapped := *client
	wrapped.Transport = &bearer{Base: base, Source: googletoken.Source(creds.TokenSource)}
	return &wrapped, nil
}

// route points each request at the publisher model's rawPredict or
// streamRawPredict under a project and region. It does nothing else to
// the request: the token is the HTTP client's.
type route struct {
	path, rawPath string // .../publishers/anthropic/models/, unescaped and escaped
	err           error  // a project or region that is not one segment
}

func newRoute(region, project string) *route {
	r := &route{
		path:    "/v1/projects/" + project + "/locations/" + region + "/publishers/anthropic/models/",
		rawPath: "/v1/projects/" + anthropic.PathSegment(project) + "/locations/" + anthropic.PathSegment(region) + "/publishers/anthropic/models/",
	}
	for _, seg := range []string{anthropic.PathSegment(project), anthropic.PathSegment(region)} {
		if err := anthropic.CheckSegment(r.rawPath, seg); err != nil {
			r.err = fmt.Errorf("vertex: %w", err)
		}
	}
	return r
}

// send points r, the SDK's request for /v1/messages, at the model's
// rawPredict, or streamRawPredict when rt streams. A path it cannot make
// is final (provider.Final): every attempt would fail alike, so the
// sender does not retry it, nor the agent send it again.
func (p *route) send(r *http.Request, rt anthropic.Route) error {
	if r.URL.Path != "/v1/messages" {
		return nil // hostOnly keeps any other path from the address
	}
	if p.err != nil {
		return provider.Final(p.err)
	}
	if rt.Model == "" {
		return provider.Final(errors.New("vertex: missing required model parameter"))
	}
	method := ":rawPredict"
	if rt.Stream {
		method = ":streamRawPredict"
	}
	// The model's ";" is escaped, with the rest: a server that drops a
	// ";" and what follows would drop the method.
	seg := url.PathEscape(rt.Model) + method
	if err := anthropic.CheckSegment(p.rawPath+seg, seg); err != nil {
		return provider.Final(fmt.Errorf("vertex: %w", err))
	}
	r.URL.Path = p.path + rt.Model + method
	r.URL.RawPath = p.rawPath + seg
	return nil
}

// hostOnly is a base URL as the wire takes it (and the SDK's vertex
// package took it): the scheme and host, its path empty, since send
// rewrites the path /v1/messages and no other. A trailing /v1 — the form
// Anthropic's Python and TypeScript SDKs and Claude Code take in
// ANTHROPIC_VERTEX_BASE_URL — is dropped, send adding it; any other path
// is an error that says so, where it would otherwise send requests the
// platform does not serve.
func hostOnly(base string) (string, error) {
	if base == "" {
		return "", nil
	}
	u, err := url.Parse(base)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", fmt.Errorf("vertex: base URL %q (Config.BaseURL or ANTHROPIC_VERTEX_BASE_URL): want an absolute URL such as https://us-east5-aiplatform.googleapis.com", base)
	}
	switch strings.TrimSuffix(u.Path, "/") {
	case "", "/v1":
		u.Path, u.RawPath = "/", ""
		return u.String(), nil
	}
	return "", fmt.Errorf("vertex: base URL %q (Config.BaseURL or ANTHROPIC_VERTEX_BASE_URL) has the path %q: the wire sends to /v1/projects/... under the host alone, so give the scheme and host (a trailing /v1 is fine)", base, u.Path)
}

func first(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
