package awssts

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

// TestReviewDuplicateElements: an answer naming AccessKeyId twice (and
// Credentials twice). The SDK's deserializer keeps the last value of each
// field; readCredentials takes the first.
func TestReviewDuplicateElements(t *testing.T) {
	body := `<AssumeRoleResponse><AssumeRoleResult><Credentials><AccessKeyId>FIRST</AccessKeyId><AccessKeyId>SECOND</AccessKeyId><SecretAccessKey>s</SecretAccessKey><SessionToken>t</SessionToken><Expiration>2099-01-01T00:00:00Z</Expiration></Credentials><Credentials><SessionToken>t2</SessionToken></Credentials></AssumeRoleResult></AssumeRoleResponse>`
	c := parityCase{name: "dup", replies: []reply{{status: 200, body: body}}}
	sdkOut, _, _ := runSide(t, c, true)
	ourOut, _, _ := runSide(t, c, false)
	for i := range ourOut {
		ourOut[i].Creds.Expires, sdkOut[i].Creds.Expires = time.Time{}, time.Time{}
	}
	if !reflect.DeepEqual(ourOut, sdkOut) {
		t.Errorf("ours %+v\n SDK %+v", ourOut, sdkOut)
	}
}

// TestReviewASkewInADateOfAnotherLayout: STS (or a proxy before it) an
// hour ahead, its Date in a layout smithy's ParseHTTPDate reads (a
// two-digit year) and net/http's ParseTime does not. The SDK sees the
// skew and retries SignatureDoesNotMatch at STS's time; ours does not.
func TestReviewASkewInADateOfAnotherLayout(t *testing.T) {
	run := func(sdk bool) (int, bool) {
		var n int
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n++
			now := time.Now().Add(time.Hour).UTC()
			w.Header().Set("Date", now.Format("Mon, _2 Jan 06 15:04:05 GMT"))
			w.Header().Set("Content-Type", "text/xml")
			if n == 1 {
				w.WriteHeader(403)
				io.WriteString(w, errorXML("SignatureDoesNotMatch", "Signature expired"))
				return
			}
			b, _ := os.ReadFile("testdata/assume_role.xml")
			w.Write(b)
		}))
		defer srv.Close()
		src := &source{creds: baseSource}
		var p aws.CredentialsProvider
		if sdk {
			cfg := aws.Config{Region: "us-west-2", Credentials: src, HTTPClient: srv.Client(), BaseEndpoint: aws.String(srv.URL),
				Retryer: func() aws.Retryer {
					return retry.NewStandard(func(o *retry.StandardOptions) {
						o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
					})
				}}
			p = stscreds.NewAssumeRoleProvider(sts.NewFromConfig(cfg), roleARN)
		} else {
			p = NewAssumeRole(Client{HTTPClient: srv.Client(), Endpoint: srv.URL, SigningRegion: "us-west-2", Backoff: func(int) time.Duration { return 0 }}, src, AssumeRoleOptions{RoleARN: roleARN})
		}
		_, err := p.Retrieve(context.Background())
		return n, err == nil
	}
	sn, sok := run(true)
	on, ook := run(false)
	if sn != on || sok != ook {
		t.Errorf("the SDK sent %d requests (ok %v), ours %d (ok %v)", sn, sok, on, ook)
	}
}
