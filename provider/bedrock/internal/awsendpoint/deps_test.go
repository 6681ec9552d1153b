package awsendpoint

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLinksNoSDKServiceClient holds what this package links (not its
// tests) to none of the SDK packages that bring a service client or its
// endpoint tables: the reason it exists (issue 34).
func TestLinksNoSDKServiceClient(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	forbidden := []string{
		"github.com/aws/aws-sdk-go-v2/service/",
		"github.com/aws/aws-sdk-go-v2/config",
		"github.com/aws/aws-sdk-go-v2/credentials/stscreds",
		"github.com/aws/aws-sdk-go-v2/credentials/ssocreds",
		"github.com/aws/aws-sdk-go-v2/credentials/logincreds",
		"github.com/aws/aws-sdk-go-v2/internal/endpoints",
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if strings.HasPrefix(pkg, f) {
				t.Errorf("links %s", pkg)
			}
		}
	}
}
