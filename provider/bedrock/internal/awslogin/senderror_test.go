package awslogin

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials/logincreds"
	"github.com/aws/aws-sdk-go-v2/service/signin"
)

// TestANameThatDoesNotExistIsTriedOnceAsTheSDKDoes: the SDK's retryer
// does not retry NXDOMAIN (RetryableConnectionError checks
// net.DNSError.IsNotFound first); awscall neither (review rev-aws3
// finding 1: awslogin's own loop retried every send error).
func TestANameThatDoesNotExistIsTriedOnceAsTheSDKDoes(t *testing.T) {
	attempts := map[string]int32{}
	for _, side := range []string{"sdk", "ours"} {
		var dials atomic.Int32
		hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return nil, &net.OpError{Op: "dial", Net: network, Err: &net.DNSError{Err: "no such host", Name: "signin.example.invalid", IsNotFound: true}}
		}}}
		path := filepath.Join(t.TempDir(), "cache.json")
		if err := os.WriteFile(path, fixture(t, "expired.json"), 0o600); err != nil {
			t.Fatal(err)
		}
		endpoint := "https://signin.example.invalid"
		var p aws.CredentialsProvider
		if side == "sdk" {
			svc := signin.New(signin.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint), HTTPClient: hc,
				Retryer: retry.NewStandard(func(o *retry.StandardOptions) {
					o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
				})})
			p = logincreds.New(svc, path)
		} else {
			p = New(Client{HTTPClient: hc, Endpoint: endpoint, Backoff: func(int) time.Duration { return 0 }}, path, Options{})
		}
		_, err := p.Retrieve(context.Background())
		if err == nil {
			t.Fatalf("%s: no error", side)
		}
		attempts[side] = dials.Load()
	}
	if attempts["sdk"] != attempts["ours"] {
		t.Errorf("attempts on NXDOMAIN: SDK %d, ours %d", attempts["sdk"], attempts["ours"])
	}
}
