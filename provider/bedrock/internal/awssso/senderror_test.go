package awssso

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials/ssocreds"
	"github.com/aws/aws-sdk-go-v2/service/sso"
)

// TestADroppedConnectionIsRetriedAsTheSDKDoes: the service closes the
// connection on the first request without answering (a load balancer's
// idle-close, a proxy reset: the client sees EOF), then answers. The SDK
// wraps every send error in smithyhttp.RequestSendError, which its
// retryer holds a connection error, and retries; awscall does too (review
// rev-aws3 finding 1: awssso's own loop made one attempt).
func TestADroppedConnectionIsRetriedAsTheSDKDoes(t *testing.T) {
	for _, sdk := range []bool{true, false} {
		homeWithToken(t, startURL, fixture(t, "valid_legacy.json"), 0o600)
		var n atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if n.Add(1) == 1 {
				conn, _, _ := w.(http.Hijacker).Hijack()
				conn.Close()
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(roleCredentialsOK.body))
		}))
		defer srv.Close()
		var p aws.CredentialsProvider
		if sdk {
			c := sso.New(sso.Options{Region: "us-west-2", BaseEndpoint: aws.String(srv.URL),
				HTTPClient: srv.Client(), Retryer: sdkRetryer()})
			p = ssocreds.New(c, accountID, roleName, startURL)
		} else {
			p = NewCredentials(Client{HTTPClient: srv.Client(), Endpoint: srv.URL, Backoff: func(int) time.Duration { return 0 }},
				CredentialsOptions{AccountID: accountID, RoleName: roleName, StartURL: startURL})
		}
		_, err := p.Retrieve(context.Background())
		t.Logf("sdk=%v: %d requests, err %v", sdk, n.Load(), err)
		if err != nil {
			t.Errorf("sdk=%v: %v (after %d requests)", sdk, err, n.Load())
		}
	}
}
