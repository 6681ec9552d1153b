package mcpfixtures

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The template the resources-templates-read scenario reads through, and
// the parts of its URIs around {id}.
const (
	dataTemplate = "test://template/{id}/data"
	dataPrefix   = "test://template/"
	dataSuffix   = "/data"
)

func registerResources(s *sdk.Server) {
	s.AddResource(&sdk.Resource{URI: "test://static-text", Name: "static-text",
		Description: "A fixed text (conformance fixture)", MIMEType: "text/plain"},
		fixedResource(&sdk.ResourceContents{URI: "test://static-text", MIMEType: "text/plain", Text: staticText}))
	s.AddResource(&sdk.Resource{URI: "test://static-binary", Name: "static-binary",
		Description: "A 1x1 red PNG image (conformance fixture)", MIMEType: "image/png"},
		fixedResource(&sdk.ResourceContents{URI: "test://static-binary", MIMEType: "image/png", Blob: redPixelPNG()}))
	s.AddResource(&sdk.Resource{URI: "test://watched-resource", Name: "watched-resource",
		Description: "A text to subscribe to (conformance fixture)", MIMEType: "text/plain"},
		fixedResource(&sdk.ResourceContents{URI: "test://watched-resource", MIMEType: "text/plain", Text: watchedText}))
	s.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: dataTemplate, Name: "template-data",
		Description: "JSON data for the id in the URI (conformance fixture)", MIMEType: "application/json"},
		templateData)
}

// fixedResource is a handler that reads c.
func fixedResource(c *sdk.ResourceContents) sdk.ResourceHandler {
	return func(context.Context, *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{c}}, nil
	}
}

// templateData reads test://template/{id}/data: JSON naming the id.
func templateData(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	id, ok := strings.CutPrefix(uri, dataPrefix)
	if ok {
		id, ok = strings.CutSuffix(id, dataSuffix)
	}
	if !ok || id == "" || strings.Contains(id, "/") {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("%s does not match %s: give one path segment for {id}, e.g. test://template/123/data", uri, dataTemplate)}
	}
	data, err := json.Marshal(struct {
		ID           string `json:"id"`
		TemplateTest bool   `json:"templateTest"`
		Data         string `json:"data"`
	}{id, true, "Data for ID: " + id})
	if err != nil {
		return nil, fmt.Errorf("encoding the data of %s: %w", uri, err)
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(data)}}}, nil
}
