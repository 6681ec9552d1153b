package otlp_test

import (
	"os/exec"
	"strings"
	"testing"
)

// unlinked are the module paths myelin's binary must not link since it
// exports OTLP itself (issue 34, cold start): the official exporters, and
// what they brought — gRPC-Go (and, through it, golang.org/x/net/trace,
// which turned the linker's method elimination off), grpc-gateway, the
// OTLP protobuf types and the protobuf runtime with its registries. The
// tests still use them, as the reference the exporters are held to.
var unlinked = []string{
	"go.opentelemetry.io/otel/exporters/",
	"go.opentelemetry.io/proto/",
	"google.golang.org/grpc",
	"google.golang.org/protobuf/",
	"google.golang.org/genproto/",
	"github.com/grpc-ecosystem/",
	"golang.org/x/net/trace",
}

func TestTheBinaryLinksNoOfficialExporterGRPCOrProtobuf(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "github.com/myelin-run/myelin/cmd/myelin").Output()
	if err != nil {
		t.Fatalf("go list -deps of cmd/myelin: %v", err)
	}
	banned := func(pkg string) bool {
		for _, p := range unlinked {
			if strings.HasPrefix(pkg, p) {
				return true
			}
		}
		return false
	}
	for _, line := range strings.Split(string(out), "\n") {
		pkg, imports, _ := strings.Cut(line, " ")
		if banned(pkg) {
			continue // its importer is named below
		}
		for _, imp := range strings.Fields(imports) {
			if banned(imp) {
				t.Errorf("%s imports %s: cmd/myelin links it again", pkg, imp)
			}
		}
	}
}
