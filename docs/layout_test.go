package docs

import (
	"os/exec"
	"strings"
	"testing"
)

// The layout README's package table describes (issue 29): a package that
// only reads messages links no database driver, and the packages that
// must import little import only what they say. Each case lists what the
// packages' whole dependency graph must not hold.
func TestThePackagesLinkOnlyWhatTheirPlaceAllows(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	for _, tc := range []struct {
		pkgs    []string
		mustNot []string
		why     string
	}{
		{[]string{"../provider/...", "../window", "../result", "../history", "../agent", "../mcp", "../mcpserver"},
			[]string{"modernc.org/sqlite", "github.com/jackc/pgx"},
			"the durable stores are history/sqlite and history/postgres; a package that only reads messages links neither driver"},
		{[]string{"../internal/jsonstring"}, []string{"github.com/myelin-run/myelin/"},
			"the one JSON-string decoder sits below result and imports nothing of myelin"},
		{[]string{"../ratelimit"}, []string{"github.com/myelin-run/myelin/"},
			"ratelimit reads what every wire says of its limits; it imports nothing of myelin, so that every wire can import it"},
		{[]string{"../result"}, []string{"github.com/myelin-run/myelin/history", "github.com/myelin-run/myelin/provider", "github.com/myelin-run/myelin/tool"},
			"result is the bottom floor: the one conversion imports no package above it"},
		{[]string{"../telemetry", "../agent", "../tool", "../mcp", "../mcpserver", "../server"},
			[]string{"go.opentelemetry.io/otel/sdk", "go.opentelemetry.io/otel/exporters", "google.golang.org/grpc"},
			"the OpenTelemetry SDK and the OTLP exporters are telemetry/otlp's: code that makes spans links only OpenTelemetry's API, so an embedder that does not export carries neither"},
	} {
		out, err := exec.Command("go", append([]string{"list", "-deps"}, tc.pkgs...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %v: %v\n%s", tc.pkgs, err, out)
		}
		tested := map[string]bool{}
		for _, p := range tc.pkgs {
			tested["github.com/myelin-run/myelin"+strings.TrimPrefix(p, "..")] = true
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, bad := range tc.mustNot {
				if strings.HasPrefix(dep, bad) && !tested[dep] {
					t.Errorf("%v links %s: %s", tc.pkgs, dep, tc.why)
				}
			}
		}
	}
	// The supervisor starts before nearly everything else is initialized
	// because it imports only syscall (and unsafe, for its system calls).
	out, err := exec.Command("go", "list", "-f", `{{join .Imports " "}}`, "../internal/supervisor").CombinedOutput()
	if err != nil {
		t.Fatalf("go list internal/supervisor: %v\n%s", err, out)
	}
	for _, imp := range strings.Fields(string(out)) {
		if imp != "syscall" && imp != "unsafe" {
			t.Errorf("internal/supervisor imports %s: it must import only syscall (and unsafe), so that its init runs before the rest of the program's", imp)
		}
	}
}
