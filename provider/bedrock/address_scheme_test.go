package bedrock

import (
	"strings"
	"testing"
)

// A configured endpoint with no http:// or https:// scheme and host (an
// easy slip in AWS_ENDPOINT_URL_*: the SDK's client takes it and sends to
// no host, each attempt failing) is New's error, which shows no secret of
// it. (An ftp:// one the SDK's client makes a request of, which net/http
// then refuses at every attempt: New refuses it at once.)
func TestAnEndpointWithNoSchemeIsNewsError(t *testing.T) {
	for _, ep := range []string{"user:s3cret@proxy.example", "proxy.example:8443", "localhost:8080", "ftp://proxy.example"} {
		t.Run(ep, func(t *testing.T) {
			addressEnvironment(t, map[string]string{"AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": ep}, "")
			if _, _, sdkErr := sdkInvoke(t); sdkErr == nil && !strings.HasPrefix(ep, "ftp:") {
				t.Fatalf("the SDK's client sent to %q", ep)
			}
			_, err := New(Config{})
			if err == nil || !strings.Contains(err.Error(), "no http:// or https:// scheme") {
				t.Fatalf("New: %v, want the endpoint refused", err)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("the error shows a secret: %v", err)
			}
		})
	}
}
