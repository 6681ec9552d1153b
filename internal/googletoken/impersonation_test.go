package googletoken

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/oauth2/google"

	"github.com/myelin-run/myelin/provider"
)

// A source failure that is final asked directly stays final behind
// impersonation: impersonate.go asks its source through an
// oauth2.Transport, so net/http wraps any failure of the source in a
// *url.Error ("Post \"https://iamcredentials…\": <source's error>") and
// impersonate.go flattens it with %v; the source's own words after the URL
// decide, not the HTTP client's form around them (a third review found
// every such failure passing, retried for all of --retry-for).
func TestBehindImpersonationASourcesFinalFailuresStayFinal(t *testing.T) {
	t.Setenv("GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES", "")
	for _, v := range []string{"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"} {
		t.Setenv(v, "")
	}
	notJSON := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(notJSON, []byte("plain text"), 0o600); err != nil {
		t.Fatal(err)
	}
	imp := closedURL(t) + "/v1/projects/-/serviceAccounts/a@b.iam.gserviceaccount.com:generateAccessToken"
	user := func(tokenURL string) map[string]any {
		return map[string]any{"type": "authorized_user", "client_id": "x", "client_secret": "y", "refresh_token": "r", "token_uri": tokenURL}
	}
	external := func(source map[string]any) map[string]any {
		return map[string]any{"type": "external_account", "audience": "//iam.googleapis.com/x",
			"subject_token_type": "urn:ietf:params:oauth:token-type:jwt", "token_url": closedURL(t) + "/token", "credential_source": source}
	}
	imds := answering(t, 404, "<html>404 - Not Found</html>")
	aws := map[string]any{"type": "external_account", "audience": "//iam.googleapis.com/x",
		"subject_token_type": "urn:ietf:params:aws:token-type:aws4_request", "token_url": closedURL(t) + "/token",
		"credential_source": map[string]any{"environment_id": "aws1", "region_url": imds + "/latest/meta-data/placement/availability-zone",
			"url": imds + "/latest/meta-data/iam/security-credentials", "regional_cred_verification_url": "https://sts.{region}.amazonaws.com?Action=GetCallerIdentity&Version=2011-06-15"}}
	for _, c := range []struct {
		name   string
		source map[string]any
	}{
		{"a user source's client deleted (401 deleted_client)", user(answering(t, 401, `{"error":"deleted_client","error_description":"The OAuth client was deleted."}`))},
		{"a user source's client blocked by the admin (400 admin_policy_enforced)", user(answering(t, 400, `{"error":"admin_policy_enforced"}`))},
		{"an external account source's file missing", external(map[string]any{"file": "/nonexistent/token"})},
		{"an external account source's executable not allowed", external(map[string]any{"executable": map[string]any{"command": "/bin/true", "timeout_millis": 5000}})},
		{"an external account source's file not the JSON declared", external(map[string]any{"file": notJSON, "format": map[string]any{"type": "json", "subject_token_field_name": "t"}})},
		{"an AWS source with no role (IMDS 404)", aws},
	} {
		t.Run(c.name, func(t *testing.T) {
			// asked directly: final (the rows of TestRealCredentials…)
			creds, err := google.CredentialsFromJSON(context.Background(), []byte(credsJSON(t, c.source)), "https://www.googleapis.com/auth/cloud-platform")
			if err != nil {
				t.Fatal(err)
			}
			_, direct := Source(creds.TokenSource).Token()
			js := credsJSON(t, map[string]any{"type": "impersonated_service_account", "service_account_impersonation_url": imp, "source_credentials": c.source})
			creds, err = google.CredentialsFromJSON(context.Background(), []byte(js), "https://www.googleapis.com/auth/cloud-platform")
			if err != nil {
				t.Fatal(err)
			}
			_, err = Source(creds.TokenSource).Token()
			t.Logf("direct: final %v: %v", provider.IsFinal(direct), direct)
			t.Logf("impersonated: final %v: %v", provider.IsFinal(err), err)
			if provider.IsFinal(direct) && !provider.IsFinal(err) {
				t.Errorf("final asked directly, passing (retried for all of --retry-for) behind impersonation")
			}
		})
	}
}
