package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// The document names every route with its method, and nothing else.
func TestTheOpenAPIDocumentDescribesEveryRoute(t *testing.T) {
	f := newFixture(t)
	status, body := f.do("GET", "/openapi.json", "")
	if status != 200 {
		t.Fatalf("openapi.json: %d", status)
	}
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	mustJSON(t, body, &doc)
	if doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi %q", doc.OpenAPI)
	}
	var inDoc, routed []string
	for path, ops := range doc.Paths {
		for method := range ops {
			if method == "parameters" {
				continue
			}
			inDoc = append(inDoc, strings.ToUpper(method)+" "+path)
		}
	}
	for _, rt := range f.srv.routes() {
		routed = append(routed, rt.method+" "+strings.ReplaceAll(rt.path, "...}", "}"))
	}
	slices.Sort(inDoc)
	slices.Sort(routed)
	if !slices.Equal(inDoc, routed) {
		t.Fatalf("the document describes\n%s\nthe server routes\n%s", strings.Join(inDoc, "\n"), strings.Join(routed, "\n"))
	}
	// every operation answers something other than the catch-all's 404
	for _, rt := range f.srv.routes() {
		path := strings.NewReplacer("{id}", "x", "{tid}", "y", "{name}", "z", "{path...}", ".myelin/tool-results/none").Replace(rt.path)
		req, _ := http.NewRequest(rt.method, path, nil)
		if _, pattern := f.srv.mux.Handler(req); pattern != rt.method+" "+rt.path {
			t.Errorf("%s %s is routed to %q", rt.method, path, pattern)
		}
	}
}
