package server

import (
	_ "embed"
	"net/http"
)

// openAPI is the API's OpenAPI 3.1 document, written by hand beside the
// routes and held to them by TestTheOpenAPIDocumentDescribesEveryRoute.
//
//go:embed openapi.json
var openAPI []byte

func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPI)
}
