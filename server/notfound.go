package server

import (
	"fmt"
	"net/http"
)

// notFound answers what no route takes outside /v1 (the API's own
// catch-all is noEndpoint), in JSON like every other error: 405 naming GET
// for a page that takes only GET (the inspector, /openapi.json), else 404
// saying where the API and the inspector are. It serves nothing itself.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	probe := r.Clone(r.Context())
	probe.Method = http.MethodGet
	if _, pattern := s.mux.Handler(probe); r.Method != http.MethodGet && r.Method != http.MethodHead && pattern != "/" && pattern != "" {
		w.Header().Set("Allow", http.MethodGet)
		writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s is not a method of %s; it takes GET", r.Method, r.URL.Path))
		return
	}
	writeError(w, http.StatusNotFound, fmt.Sprintf("no page %s %s: the API is under /v1 (GET /openapi.json lists it), the inspector at /", r.Method, r.URL.Path))
}
