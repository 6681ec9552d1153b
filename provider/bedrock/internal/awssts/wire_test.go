package awssts

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/provider/bedrock/internal/awscall"
)

// TestAnEndpointThatIsNotAURLFailsAtOnce pins that a provider given no
// absolute endpoint says so and sends nothing (the SDK's client would
// try, fail to send and retry).
func TestAnEndpointThatIsNotAURLFailsAtOnce(t *testing.T) {
	for _, endpoint := range []string{"", "sts.us-east-1.amazonaws.com", "/just/a/path", "::"} {
		p := NewWebIdentity(Client{Client: awscall.Client{Endpoint: endpoint, HTTPClient: &http.Client{Transport: noTransport{t}}}},
			WebIdentityOptions{RoleARN: "arn:aws:iam::1:role/r", TokenFile: writeToken(t)})
		_, err := p.Retrieve(context.Background())
		if err == nil || !strings.Contains(err.Error(), "STS endpoint") {
			t.Errorf("endpoint %q: error %v, want one about the STS endpoint", endpoint, err)
		}
	}
}

// noTransport fails the test if anything is sent.
type noTransport struct{ t *testing.T }

func (n noTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	n.t.Errorf("sent %s %s", r.Method, r.URL)
	return nil, errors.New("nothing may be sent")
}

func writeToken(t *testing.T) string {
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("token"), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}
