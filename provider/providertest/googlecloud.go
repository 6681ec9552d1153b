package providertest

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// This file is the fake's Claude on Google Cloud (Anthropic managed):
// Anthropic's own gateway at claude.googleapis.com, which serves the
// first-party Messages API unchanged under a workspace's path, as
// anthropic-sdk-go's googlecloud package calls it:
// POST /v1/projects/PROJECT/locations/LOCATION/workspaces/WORKSPACE/invoke/v1/messages
// with a Google OAuth bearer token, the first-party body (with "model",
// without "anthropic_version") and the first-party answer. Behind its
// door the fake is the Anthropic one (NewAnthropic): the same steps,
// windows, cache, thinking checks and error bodies.

// GoogleCloudPath is the prefix NewGoogleCloud's URL carries: the
// gateway's base URL less its host, for project "test-project", location
// "global" and workspace "wrkspc_test", the form
// ANTHROPIC_GOOGLE_CLOUD_BASE_URL takes.
const GoogleCloudPath = "/v1/projects/test-project/locations/global/workspaces/wrkspc_test/invoke/"

// googleCloudWire is the name start knows the gateway by; the server's
// wire is then "anthropic", with the gateway's door in front.
const googleCloudWire = "google-cloud"

// NewGoogleCloud starts a fake of Anthropic's gateway on Google Cloud. Its
// URL is the gateway's base URL (ending in GoogleCloudPath), but any
// project, location and workspace are served. A request it takes must be
// a POST to .../workspaces/WORKSPACE/invoke/v1/messages carrying a bearer
// token and neither an x-api-key nor an anthropic-workspace-id header
// (the gateway mints that one itself, as the SDK's package says), with a
// body that names the model and has no anthropic_version: one that does
// not is refused — Google's error JSON (404, 401, 400), or the Messages
// API's 400 for the body — and is neither recorded nor takes a step.
// Past the door it is NewAnthropic's server: the same steps, Window,
// Cache, CheckThinking and Respond; Paths gives the gateway's paths.
func NewGoogleCloud(t testing.TB, steps ...Step) *Server { return start(t, googleCloudWire, steps) }

// googleCloudPath is the path of the Messages API on the gateway.
var googleCloudPath = regexp.MustCompile(`^/v1/projects/[^/]+/locations/[^/]+/workspaces/[^/]+/invoke/v1/messages$`)

// refusedAtGateway answers a request the gateway refuses, and says so;
// it returns false, writing nothing, for one it lets through.
func refusedAtGateway(w http.ResponseWriter, r *http.Request, body []byte) bool {
	auth := r.Header.Get("Authorization")
	switch {
	case r.Method != http.MethodPost || !googleCloudPath.MatchString(r.URL.EscapedPath()):
		googleError(w, http.StatusNotFound, "The requested URL "+r.URL.EscapedPath()+" was not found on this server.")
	case !strings.HasPrefix(auth, "Bearer ") || len(auth) == len("Bearer "):
		googleError(w, http.StatusUnauthorized, "Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential.")
	case r.Header.Get("x-api-key") != "":
		googleError(w, http.StatusBadRequest, "providertest: an x-api-key was sent to the Google Cloud gateway, which authorizes with Google credentials")
	case r.Header.Get("anthropic-workspace-id") != "":
		googleError(w, http.StatusBadRequest, "providertest: a client-sent anthropic-workspace-id header; the workspace is in the path")
	default:
		problem := gatewayBodyProblem(body)
		if problem == "" {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, mustJSON(map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": problem}}))
	}
	return true
}

// gatewayBodyProblem is what is wrong with a first-party body sent to the
// gateway, "" when nothing: it names the model in the body and carries no
// anthropic_version (the platforms' key, which the first-party API does
// not take).
func gatewayBodyProblem(body []byte) string {
	var v map[string]json.RawMessage
	if err := json.Unmarshal(body, &v); err != nil {
		return "the body is not a JSON object"
	}
	if _, ok := v["model"]; !ok {
		return "model: Field required"
	}
	if _, ok := v["anthropic_version"]; ok {
		return "anthropic_version: Extra inputs are not permitted"
	}
	return ""
}
