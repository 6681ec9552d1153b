package collector

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLinksNoGRPCNorProtobufNorExporters holds the reason the package
// exists (issue 34): its non-test dependencies hold no gRPC-Go, no
// protobuf runtime, no generated OTLP types and no official exporter.
func TestLinksNoGRPCNorProtobufNorExporters(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	forbidden := []string{"google.golang.org/grpc", "google.golang.org/protobuf", "go.opentelemetry.io/proto", "go.opentelemetry.io/otel/exporters", "github.com/grpc-ecosystem"}
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if dep == f || strings.HasPrefix(dep, f+"/") {
				t.Errorf("the package links %s", dep)
			}
		}
	}
}
