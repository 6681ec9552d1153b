package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// unlinked are import paths myelin must not link (issue 34, point 2):
// Google's SDKs, which the Gemini and Vertex wires no longer use, and what
// only they brought — OpenCensus, cloud.google.com/go/auth, S2A, go-cmp —
// ~100 package inits run at every start of every command and engine; and
// the AWS SDK's config loader, its credential providers that need a
// service, and the service clients they bring (STS, SSO, SSO OIDC,
// sign-in), whose endpoint tables and schemas are built at start
// (provider/bedrock/internal/awsconfig loads the configuration instead);
// and anthropic-sdk-go, with what only it brought (invopop's JSON schema,
// an ordered map, a YAML parser, a JSON parser): the Claude wires
// post and read their requests themselves (provider/anthropic). Tests may
// import them (to hold the wires to the SDKs); the binary not.
var unlinked = []string{
	"github.com/aws/aws-sdk-go-v2/config",
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds",
	"github.com/aws/aws-sdk-go-v2/credentials/ssocreds",
	"github.com/aws/aws-sdk-go-v2/credentials/logincreds",
	"github.com/aws/aws-sdk-go-v2/service/",
	"github.com/aws/aws-sdk-go-v2/internal/endpoints",
	"google.golang.org/genai",
	"google.golang.org/api/",
	"go.opencensus.io/",
	"cloud.google.com/go/auth",
	"github.com/google/s2a-go",
	"github.com/google/go-cmp/",
	"github.com/anthropics/anthropic-sdk-go/",
	"github.com/invopop/jsonschema",
	"github.com/pb33f/ordered-map/",
	"go.yaml.in/yaml/",
	"github.com/buger/jsonparser",
	"github.com/myelin-run/myelin/provider/internal/anthropicsdk",
	// its init builds the table of every metric's description (~0.5 ms
	// and a dozen page faults a start); history reads ReadMemStats
	"runtime/metrics",
}

// TestTheBinaryLinksNoSDKItNoLongerUses holds `go list -deps` of this
// command to none of unlinked, on this machine and for the other systems
// a release is built for (a file built only for one of them could bring
// one back). Not Windows: myelin does not build there
// (workspace/build_windows.go).
func TestTheBinaryLinksNoSDKItNoLongerUses(t *testing.T) {
	for _, target := range []string{"", "linux/arm64", "darwin/arm64", "freebsd/amd64"} {
		cmd := exec.Command("go", "list", "-deps", ".")
		if goos, goarch, ok := strings.Cut(target, "/"); ok {
			cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps (%q): %v\n%s", target, err, out)
		}
		var linked []string
		for _, pkg := range strings.Fields(string(out)) {
			for _, p := range unlinked {
				if pkg == strings.TrimSuffix(p, "/") || strings.HasPrefix(pkg, p) {
					linked = append(linked, pkg)
				}
			}
		}
		if len(linked) > 0 {
			t.Fatalf("myelin (%q) links %d packages it must not: %s (find who imports them: go list -deps -f '{{.ImportPath}}: {{.Imports}}' ./cmd/myelin)", target, len(linked), strings.Join(linked, ", "))
		}
	}
}
