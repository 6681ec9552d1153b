package googletoken

import (
	"context"
	"testing"

	"golang.org/x/oauth2/google"

	"github.com/myelin-run/myelin/provider"
)

// Workload identity federation with impersonation (GitHub Actions'
// google-github-actions/auth writes this): external_account with
// service_account_impersonation_url; its subject token file missing.
func TestAnExternalAccountWithImpersonationWhoseFileIsMissingIsFinal(t *testing.T) {
	js := credsJSON(t, map[string]any{"type": "external_account", "audience": "//iam.googleapis.com/x",
		"subject_token_type": "urn:ietf:params:oauth:token-type:jwt", "token_url": closedURL(t) + "/token",
		"service_account_impersonation_url": closedURL(t) + "/v1/projects/-/serviceAccounts/a@b.iam.gserviceaccount.com:generateAccessToken",
		"credential_source":                 map[string]any{"file": "/nonexistent/token"}})
	creds, err := google.CredentialsFromJSON(context.Background(), []byte(js), "https://www.googleapis.com/auth/cloud-platform")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Source(creds.TokenSource).Token()
	t.Logf("final %v: %v", provider.IsFinal(err), err)
	if !provider.IsFinal(err) {
		t.Errorf("a missing subject token file behind impersonation is passing")
	}
}
