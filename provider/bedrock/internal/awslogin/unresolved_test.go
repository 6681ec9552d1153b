package awslogin

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials/logincreds"
	"github.com/aws/aws-sdk-go-v2/service/signin"
)

// TestAnUnresolvedEndpointFailsOnlyARefresh: with a sign-in client whose
// endpoint could not be resolved (Client.Err), unexpired cached
// credentials are still returned, as the SDK's, whose client resolves
// the endpoint only when it sends (review rev-aws3 finding 2); expired
// ones fail with the resolution error, the cache left alone.
func TestAnUnresolvedEndpointFailsOnlyARefresh(t *testing.T) {
	unresolved := errors.New("resolving the endpoint: not a URL")
	for _, c := range []struct {
		fixture string
		wantErr bool
	}{{"valid.json", false}, {"expired.json", true}} {
		for _, side := range []string{"SDK", "ours"} {
			path := filepath.Join(t.TempDir(), "cache.json")
			before := fixture(t, c.fixture)
			if err := os.WriteFile(path, before, 0o600); err != nil {
				t.Fatal(err)
			}
			var p aws.CredentialsProvider
			if side == "SDK" {
				p = logincreds.New(signin.New(signin.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://a b")}), path)
			} else {
				p = New(Client{Err: unresolved}, path, Options{RestrictPermissions: true})
			}
			creds, err := p.Retrieve(context.Background())
			if (err != nil) != c.wantErr || (err == nil && creds.AccessKeyID == "") {
				t.Errorf("%s, %s: credentials %q, error %v; want error %v", side, c.fixture, creds.AccessKeyID, err, c.wantErr)
			}
			if side == "ours" && c.wantErr && !errors.Is(err, unresolved) {
				t.Errorf("ours, %s: %v, want the resolution error wrapped", c.fixture, err)
			}
			if after, _ := os.ReadFile(path); string(after) != string(before) {
				t.Errorf("%s, %s: the cache file was rewritten", side, c.fixture)
			}
		}
	}
}
