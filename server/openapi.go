package server

import (
	_ "embed"
	"net/http"
)

// openAPI is the API's OpenAPI 3.1 document, written by hand beside the
// routes and held to them by the tests of openapi_test.go: it describes
// every route and no other, passes an OpenAPI validator (kin-openapi),
// names a server, gives each operation an operationId and its 4xx
// answers, and types the data of every event the stream carries as the
// server encodes it (components.schemas.Events, by event type).
//
//go:embed openapi.json
var openAPI []byte

func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPI)
}
