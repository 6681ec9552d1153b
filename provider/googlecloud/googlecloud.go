// Package googlecloud is Claude on Google Cloud, Anthropic managed:
// Anthropic's own gateway at claude.googleapis.com, which serves the
// first-party Messages API under a Google Cloud project, location and
// Anthropic workspace. It is the Anthropic Messages wire
// (provider/anthropic: its encoder, cache markers and reading of the
// answer) posted to
// https://claude.googleapis.com/v1/projects/PROJECT/locations/LOCATION/workspaces/WORKSPACE/invoke/v1/messages
// with a Google OAuth token from application default credentials, as
// anthropic-sdk-go's googlecloud package posts it (which myelin no longer
// links: TestTheBaseURLIsTheSDKs holds the address to it).
//
// It is not Vertex AI (provider/vertex): the gateway takes the
// first-party request unchanged — the same path after its prefix, the
// model named in the body, Anthropic's model names, no anthropic_version
// in the body — so the body is the first-party wire's byte for byte.
// It must not read or send an Anthropic API key.
package googlecloud

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"github.com/myelin-run/myelin/internal/googletoken"
	"github.com/myelin-run/myelin/provider/anthropic"
)

// Name names the platform in errors and in the cache settings; it is the
// CLI's --provider value.
const Name = "google-cloud"

// scope is the OAuth scope of the credentials found by default.
const scope = "https://www.googleapis.com/auth/cloud-platform"

// The variables read, the ones anthropic-sdk-go's googlecloud package
// reads.
const (
	envProject   = "ANTHROPIC_GOOGLE_CLOUD_PROJECT"
	envLocation  = "ANTHROPIC_GOOGLE_CLOUD_LOCATION"
	envWorkspace = "ANTHROPIC_GOOGLE_CLOUD_WORKSPACE_ID"
	envBaseURL   = "ANTHROPIC_GOOGLE_CLOUD_BASE_URL"
)

// Config configures the wire on the gateway. The zero value reads the
// project from ANTHROPIC_GOOGLE_CLOUD_PROJECT (else GOOGLE_CLOUD_PROJECT,
// else the project of the application default credentials), the location
// from ANTHROPIC_GOOGLE_CLOUD_LOCATION (else "global"), the workspace from
// ANTHROPIC_GOOGLE_CLOUD_WORKSPACE_ID, the address from
// ANTHROPIC_GOOGLE_CLOUD_BASE_URL when set — the variables the SDK's
// googlecloud package reads — and the credentials from Google's
// application default credentials (GOOGLE_APPLICATION_CREDENTIALS,
// gcloud's application-default login, the metadata server).
type Config struct {
	// Config is the wire's own settings, as on the first-party API: its
	// BaseURL, when set, replaces the gateway's whole base URL (the
	// https://claude.googleapis.com/v1/projects/.../invoke/ the project,
	// location and workspace make, or $ANTHROPIC_GOOGLE_CLOUD_BASE_URL),
	// to which v1/messages is added: for a proxy, or a test's fake;
	// NoStream, MaxRetries and HTTPClient as there. Its APIKey must stay
	// empty.
	anthropic.Config
	Project     string // the Google Cloud project ID; default as Config says
	Location    string // default $ANTHROPIC_GOOGLE_CLOUD_LOCATION, else "global"
	WorkspaceID string // the Anthropic workspace ("wrkspc_..."); default $ANTHROPIC_GOOGLE_CLOUD_WORKSPACE_ID
	// Credentials, when set, are used instead of the application default
	// credentials (a test passes a static token source here).
	Credentials *google.Credentials
}

// New returns the wire, or an error that names what to set: the project,
// the workspace, or credentials that could not be found. With a base URL
// the project and workspace are not needed (the URL holds them).
func New(cfg Config) (*anthropic.OnPlatform, error) {
	// the application default credentials' token requests end after
	// googletoken.AskTimeout: a token endpoint that never answers must
	// not hold the token source's lock for ever (a caller's Credentials
	// keep their own client)
	ctx := googletoken.Context(context.Background())
	creds := cfg.Credentials
	if creds == nil {
		found, err := google.FindDefaultCredentials(ctx, scope)
		if err != nil {
			return nil, fmt.Errorf("%s: no Google credentials (run `gcloud auth application-default login` or set GOOGLE_APPLICATION_CREDENTIALS): %w", Name, err)
		}
		creds = found
	}
	if creds.TokenSource == nil {
		return nil, fmt.Errorf("%s: the Google credentials have no token source", Name)
	}
	base := first(cfg.BaseURL, os.Getenv(envBaseURL))
	project := first(cfg.Project, os.Getenv(envProject), os.Getenv("GOOGLE_CLOUD_PROJECT"), creds.ProjectID)
	workspace := first(cfg.WorkspaceID, os.Getenv(envWorkspace))
	if base != "" {
		if u, err := url.Parse(base); err != nil || u.Scheme == "" || u.Host == "" {
			return nil, fmt.Errorf("%s: base URL %q (Config.BaseURL or %s): want an absolute URL such as https://claude.googleapis.com/v1/projects/PROJECT/locations/global/workspaces/WORKSPACE/invoke/", Name, base, envBaseURL)
		}
	} else {
		if project == "" {
			return nil, fmt.Errorf("%s: no Google Cloud project: set %s", Name, envProject)
		}
		if workspace == "" {
			return nil, fmt.Errorf("%s: no Anthropic workspace: set %s (the workspace's ID, wrkspc_...)", Name, envWorkspace)
		}
	}
	location := first(cfg.Location, os.Getenv(envLocation), "global")
	given := base // Config.BaseURL or the variable's, which names the account when set
	if base == "" {
		derived, err := baseURL(project, location, workspace)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", Name, err)
		}
		base = derived
	}
	wire := cfg.Config
	wire.BaseURL = "" // in the platform's address
	return anthropic.NewOn(anthropic.Platform{Name: Name, BaseURL: base, Authorize: bearer(creds.TokenSource),
		Identity: identity(project, location, workspace, given)}, wire)
}

// baseURL is the gateway's base URL for project, location and workspace,
// as the SDK's googlecloud package derives it: each escaped as one path
// segment, and refused, as the SDK refuses it, when one would not reach
// the gateway as that segment (a dot segment, a leading ";").
func baseURL(project, location, workspace string) (string, error) {
	segs := []string{anthropic.PathSegment(project), anthropic.PathSegment(location), anthropic.PathSegment(workspace)}
	base := "https://claude.googleapis.com/v1/projects/" + segs[0] + "/locations/" + segs[1] + "/workspaces/" + segs[2] + "/invoke/"
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	for _, seg := range segs {
		if err := anthropic.CheckSegment(u.EscapedPath(), seg); err != nil {
			return "", err
		}
	}
	return base, nil
}

// identity names the account of the gateway's requests, for the rate
// limiter's key (docs/ratelimits.md, "Platforms"): "gcp:PROJECT/LOCATION/
// WORKSPACE", the Anthropic workspace the limits are kept for; with a
// base URL and no project or workspace set, "gcp:" and the URL's path,
// which names them. Never a token.
func identity(project, location, workspace, base string) string {
	if base != "" && (project == "" || workspace == "") {
		if u, err := url.Parse(base); err == nil {
			return "gcp:" + u.EscapedPath()
		}
	}
	return "gcp:" + project + "/" + location + "/" + workspace
}

// bearer authorizes each attempt of a request, streamed or whole
// (anthropic.Platform.Authorize), as the SDK's googlecloud package's
// middleware does one through the SDK: with the token source's token,
// reused until it expires. A token that cannot be had is the attempt's
// error, marked provider.Unsent (googletoken.Source): a failure known to
// pass (a 5xx, 408 or 429, the HTTP client's own failure such as no
// connection or an HTTP/2 stream reset) retried by the wire's sender
// and then, as a provider.ConnectionError, by the agent under
// --retry-for; anything else (a refusal, a key that cannot be read, an
// answer that is no token, a certificate that does not verify, a host
// not found) final. The attempt's context bounds the wait for a
// token (googletoken.Within): a token endpoint that never answers does
// not hold a cancelled turn.
func bearer(ts oauth2.TokenSource) func(*http.Request) error {
	ts = oauth2.ReuseTokenSource(nil, googletoken.Source(ts))
	return func(r *http.Request) error {
		tok, err := googletoken.Within(r.Context(), ts)
		if err != nil {
			return fmt.Errorf("googlecloud: failed to fetch Google access token: %w", err)
		}
		tok.SetAuthHeader(r)
		return nil
	}
}

func first(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
