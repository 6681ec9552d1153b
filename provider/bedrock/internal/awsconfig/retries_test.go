package awsconfig

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
)

// runWithHandler runs both loaders in e against the fake behind wrap,
// which is told whether the SDK's loader is the one running.
func runWithHandler(t *testing.T, e environment, wrap func(fake *fakeAWS, sdkRun *bool) http.HandlerFunc) (sdk, ours loaded) {
	fake := newFakeAWS(t)
	sdkRun := true
	srv := httptest.NewServer(wrap(fake, &sdkRun))
	t.Cleanup(srv.Close)
	fake.srv = srv
	dir := t.TempDir()
	setEnvironment(t, e, srv.URL, dir)
	sdk = load(t, e, fake, dir, func(ctx context.Context) (aws.Config, error) { return config.LoadDefaultConfig(ctx) })
	sdkRun = false
	ours = load(t, e, fake, dir, Load)
	return sdk, ours
}

// Profile c assumes role c with role b's credentials (b assumed with
// a's keys); STS throttles c's first AssumeRole once per loader. The SDK's
// STS client does not cache the provider it signs with, so its retry of
// c re-assumes b (a review found ours caching the source).
func TestAThrottledOuterRoleAssumesItsSourceRoleAgainAsTheSDKDoes(t *testing.T) {
	e := environment{files: map[string]string{".aws/config": "[profile a]\naws_access_key_id = AKA\naws_secret_access_key = s\n[profile b]\nrole_arn = arn:aws:iam::1:role/b\nsource_profile = a\n[profile c]\nrole_arn = arn:aws:iam::1:role/c\nsource_profile = b\nrole_session_name = mine\n"},
		env: map[string]string{"AWS_PROFILE": "c", "AWS_REGION": "us-east-1"}}
	throttled := map[bool]bool{}
	sdk, ours := runWithHandler(t, e, func(fake *fakeAWS, sdkRun *bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && r.URL.Path == "/" {
				r.ParseForm()
				if r.PostForm.Get("RoleArn") == "arn:aws:iam::1:role/c" && !throttled[*sdkRun] {
					throttled[*sdkRun] = true
					fake.record("sts throttled role/c")
					w.Header().Set("Content-Type", "text/xml")
					w.WriteHeader(400)
					fmt.Fprint(w, `<ErrorResponse><Error><Type>Sender</Type><Code>Throttling</Code><Message>Rate exceeded</Message></Error><RequestId>r</RequestId></ErrorResponse>`)
					return
				}
			}
			fake.serve(w, r)
		}
	})
	if !slices.Equal(sdk.requests, ours.requests) {
		t.Errorf("requests:\n the SDK's %s\n ours      %s", strings.Join(sdk.requests, "\n           "), strings.Join(ours.requests, "\n           "))
	}
}

// A role whose credential_source (the container endpoint) answers 500:
// the SDK's retryer sees the source's retryable status through "get
// identity: get credentials: %w" and retries the AssumeRole attempt
// (attempts x attempts container calls; a review found ours retrying
// only a source's network errors). Two attempts keep the SDK's real
// backoff short.
func TestARoleWhoseSourceFailsRetryablyIsRetriedAsTheSDKRetriesIt(t *testing.T) {
	e := environment{files: map[string]string{".aws/config": "[profile e]\nrole_arn = arn:aws:iam::1:role/e\ncredential_source = EcsContainer\n"},
		env: map[string]string{"AWS_PROFILE": "e", "AWS_REGION": "us-east-1", "AWS_CONTAINER_CREDENTIALS_FULL_URI": "{{URL}}/container", "AWS_CONTAINER_AUTHORIZATION_TOKEN": "ctok", "AWS_MAX_ATTEMPTS": "2"}}
	sdk, ours := runWithHandler(t, e, func(fake *fakeAWS, _ *bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/container" {
				fake.record("container 500")
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(500)
				fmt.Fprint(w, `{"code":"InternalError","message":"busy"}`)
				return
			}
			fake.serve(w, r)
		}
	})
	if len(sdk.requests) != len(ours.requests) {
		t.Errorf("the container was asked %d times by the SDK, %d times by ours\n SDK: %v\n ours: %v", len(sdk.requests), len(ours.requests), sdk.credsErr, ours.credsErr)
	}
}
