package awsendpoint

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// sdkServicePackages are the SDK packages that bring a service client or
// its endpoint tables (issue 34): a package and all below it.
var sdkServicePackages = []string{
	"github.com/aws/aws-sdk-go-v2/service",
	"github.com/aws/aws-sdk-go-v2/config",
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds",
	"github.com/aws/aws-sdk-go-v2/credentials/ssocreds",
	"github.com/aws/aws-sdk-go-v2/credentials/logincreds",
	"github.com/aws/aws-sdk-go-v2/internal/endpoints",
}

// linksAServiceClient says whether pkg is one of sdkServicePackages or
// below one.
func linksAServiceClient(pkg string) bool {
	for _, f := range sdkServicePackages {
		if pkg == f || strings.HasPrefix(pkg, f+"/") {
			return true
		}
	}
	return false
}

// TestTheServicePackagesAreRecognised pins linksAServiceClient on the
// packages the bedrock provider may and may not link.
func TestTheServicePackagesAreRecognised(t *testing.T) {
	for pkg, want := range map[string]bool{
		"github.com/aws/aws-sdk-go-v2/service/sts":                      true,
		"github.com/aws/aws-sdk-go-v2/service/internal/presigned-url":   true,
		"github.com/aws/aws-sdk-go-v2/config":                           true,
		"github.com/aws/aws-sdk-go-v2/credentials/stscreds":             true,
		"github.com/aws/aws-sdk-go-v2/credentials/ssocreds":             true,
		"github.com/aws/aws-sdk-go-v2/credentials/logincreds":           true,
		"github.com/aws/aws-sdk-go-v2/internal/endpoints/v2":            true,
		"github.com/aws/aws-sdk-go-v2/internal/endpoints/awsrulesfn":    true,
		"github.com/aws/aws-sdk-go-v2/aws":                              false,
		"github.com/aws/aws-sdk-go-v2/aws/signer/v4":                    false,
		"github.com/aws/aws-sdk-go-v2/credentials":                      false,
		"github.com/aws/aws-sdk-go-v2/credentials/processcreds":         false,
		"github.com/aws/aws-sdk-go-v2/credentials/endpointcreds":        false,
		"github.com/aws/aws-sdk-go-v2/credentials/ec2rolecreds":         false,
		"github.com/aws/aws-sdk-go-v2/feature/ec2/imds":                 false,
		"github.com/aws/aws-sdk-go-v2/feature/ec2/imds/internal/config": false,
		"github.com/aws/smithy-go":                                      false,
	} {
		if got := linksAServiceClient(pkg); got != want {
			t.Errorf("linksAServiceClient(%s) = %v, want %v", pkg, got, want)
		}
	}
}

// TestTheBedrockProviderLinksNoSDKServiceClient holds the bedrock
// provider and every package under its internal/ (what each links, not
// its tests) to none of the SDK packages that bring a service client or
// its endpoint tables: the reason these packages exist (issue 34). It
// fails, too, if a package under internal/ is not listed.
func TestTheBedrockProviderLinksNoSDKServiceClient(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Deps " "}}`, "../../...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	listed := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := fields[0]
		listed[pkg] = true
		for _, dep := range fields[1:] {
			if linksAServiceClient(dep) {
				t.Errorf("%s links %s", pkg, dep)
			}
		}
	}
	const bedrock = "github.com/myelin-run/myelin/provider/bedrock"
	want := []string{bedrock}
	dirs, err := os.ReadDir("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if d.IsDir() {
			want = append(want, bedrock+"/internal/"+d.Name())
		}
	}
	for _, pkg := range want {
		if !listed[pkg] {
			t.Errorf("%s was not checked", pkg)
		}
	}
	t.Logf("%d packages checked", len(listed))
}
