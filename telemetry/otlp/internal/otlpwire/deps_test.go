package otlpwire

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// forbiddenDeps are the import path prefixes this package exists to keep
// out of myelin's executable.
var forbiddenDeps = []string{
	"google.golang.org/protobuf",
	"go.opentelemetry.io/proto",
	"go.opentelemetry.io/otel/exporters",
	"google.golang.org/grpc",
	"github.com/grpc-ecosystem",
}

func TestThePackageLinksNoProtobufRuntimeOTLPTypesOrExporter(t *testing.T) {
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	out, err := exec.Command(goTool, "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps .: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 2 {
		t.Fatalf("go list -deps . listed %q: too few to be this package's dependencies", deps)
	}
	for _, dep := range deps {
		for _, bad := range forbiddenDeps {
			if dep == bad || strings.HasPrefix(dep, bad+"/") {
				t.Errorf("the package depends on %s (under %s)", dep, bad)
			}
		}
	}
}
