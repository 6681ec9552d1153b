package providertest

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// This file is the fake's Google Vertex AI: Claude's Messages API behind
// the publisher model's rawPredict and streamRawPredict, as
// anthropic-sdk-go's vertex package calls them and as the documentation of
// Claude on Vertex AI describes them. The model is in the path; the body
// is the Messages API's less "model", with "anthropic_version"; the answer
// is the Messages API's JSON or its server-sent events, as on the
// first-party API. Errors of the model come as the Messages API's own
// body; Google's own refusals (auth, quota) as Google's error JSON,
// {"error": {"code", "message", "status"}}.

// NewVertex starts a fake Vertex AI. A request it takes must be a POST to
// /v1/projects/PROJECT/locations/REGION/publishers/anthropic/models/MODEL
// with :rawPredict or :streamRawPredict, carry a bearer token, and have a
// body with "anthropic_version" and without "model": one that does not is
// refused as Vertex refuses it (404, 401, 400) and still takes its step.
// Steps and Window work as on NewAnthropic (the model's refusals are the
// API's body, passed on); an error Status of 401, 403 or 429 answers with
// Google's error JSON instead, as Vertex's own refusals (auth, quota).
func NewVertex(t testing.TB, steps ...Step) *Server { return start(t, "vertex", steps) }

// vertexPath is the path of rawPredict and streamRawPredict.
var vertexPath = regexp.MustCompile(`^/v1/projects/([^/]+)/locations/([^/]+)/publishers/anthropic/models/([^/:]+):(rawPredict|streamRawPredict)$`)

// googleStatus is the status word of Google's error JSON for a code.
var googleStatus = map[int]string{
	400: "INVALID_ARGUMENT",
	401: "UNAUTHENTICATED",
	403: "PERMISSION_DENIED",
	404: "NOT_FOUND",
	429: "RESOURCE_EXHAUSTED",
	500: "INTERNAL",
	503: "UNAVAILABLE",
}

func (s *Server) answerVertex(w http.ResponseWriter, r *http.Request, body []byte, step Step) {
	m := vertexPath.FindStringSubmatch(r.URL.EscapedPath())
	switch {
	case r.Method != http.MethodPost || m == nil:
		googleError(w, http.StatusNotFound, "The requested URL was not found on this server.")
		return
	case !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") || len(r.Header.Get("Authorization")) == len("Bearer "):
		googleError(w, http.StatusUnauthorized, "Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential.")
		return
	}
	if problem := bodyProblem(body, "model"); problem != "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, mustJSON(map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": problem}}))
		return
	}
	stream := m[4] == "streamRawPredict"
	if step.Status != 0 && step.Status != http.StatusOK {
		w.Header().Set("retry-after-ms", "5") // as the Anthropic fake: retries in tests stay quick
		switch step.Status {
		case http.StatusUnauthorized, http.StatusForbidden, http.StatusTooManyRequests:
			msg := step.ErrorMessage
			if msg == "" {
				msg = http.StatusText(step.Status)
			}
			googleError(w, step.Status, msg)
		default: // the model's own refusal, passed on
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(step.Status)
			io.WriteString(w, anthropicError(step))
		}
		return
	}
	if step.Raw != "" {
		if stream {
			w.Header().Set("Content-Type", "text/event-stream")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		io.WriteString(w, step.Raw)
		if step.Cut {
			cut(w)
		}
		return
	}
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, anthropicMessage(step))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	events := AnthropicStream(step)
	if step.CutAfter > 0 {
		parts := strings.SplitAfter(events, "\n\n")
		io.WriteString(w, strings.Join(parts[:min(step.CutAfter, len(parts))], ""))
		endCut(w, step)
		return
	}
	io.WriteString(w, events)
}

// anthropicError is the Messages API's error body for a step's status.
func anthropicError(step Step) string {
	msg := step.ErrorMessage
	if msg == "" {
		msg = http.StatusText(step.Status)
	}
	kind := "invalid_request_error"
	switch {
	case step.Status == 429:
		kind = "rate_limit_error"
	case step.Status == 529:
		kind = "overloaded_error"
	case step.Status >= 500:
		kind = "api_error"
	}
	return mustJSON(map[string]any{"type": "error", "error": map[string]any{"type": kind, "message": msg}})
}

func googleError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	io.WriteString(w, mustJSON(map[string]any{"error": map[string]any{"code": code, "message": msg, "status": googleStatus[code]}}))
}

// Paths returns the URL paths of the requests received so far, in order:
// on Bedrock and Vertex they name the model, the project and the region.
func (s *Server) Paths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.paths...)
}
