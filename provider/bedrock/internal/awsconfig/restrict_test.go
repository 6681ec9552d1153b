package awsconfig

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
)

// TestLoginCacheRecreatedWithTheSDKsModeWhenUnrestricted: with
// AWS_RESTRICT_FILE_PERMISSIONS=unrestricted, a login refresh whose cache
// file has gone meanwhile (aws logout, another tool) writes a new file.
// LoadDefaultConfig builds logincreds before it resolves
// RestrictFilePermissions (resolveRestrictFilePermissions is its last
// resolver), so the SDK's provider always restricts: 0600. Load must make
// the same file.
func TestLoginCacheRecreatedWithTheSDKsModeWhenUnrestricted(t *testing.T) {
	session := "arn:aws:iam::123456789012:user/me"
	modes := map[string]os.FileMode{}
	for _, side := range []string{"sdk", "ours"} {
		dir := t.TempDir()
		cache := filepath.Join(dir, loginCache(session))
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			os.Remove(cache) // gone while the refresh is under way
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"accessToken": map[string]any{"accessKeyId": "AK", "secretAccessKey": "s", "sessionToken": "t"},
				"expiresIn": 900, "refreshToken": "next", "tokenType": "aws_sigv4"})
		}))
		defer srv.Close()
		setEnvironment(t, environment{env: map[string]string{"AWS_PROFILE": "l", "AWS_RESTRICT_FILE_PERMISSIONS": "unrestricted"}}, srv.URL, dir)
		os.MkdirAll(filepath.Dir(cache), 0o700)
		os.MkdirAll(filepath.Join(dir, ".aws"), 0o700)
		os.WriteFile(filepath.Join(dir, ".aws/config"), []byte("[profile l]\nlogin_session = "+session+"\nregion = us-east-1\n"), 0o600)
		b, _ := os.ReadFile("testdata/login-expired.json")
		key, _ := os.ReadFile("testdata/login-key.pem")
		q, _ := json.Marshal(string(key))
		os.WriteFile(cache, []byte(strings.ReplaceAll(string(b), `"@DPOPKEY@"`, string(q))), 0o600)

		var cfg aws.Config
		var err error
		if side == "sdk" {
			cfg, err = config.LoadDefaultConfig(context.Background())
		} else {
			cfg, err = Load(context.Background())
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cfg.Credentials.Retrieve(context.Background()); err != nil {
			t.Fatalf("%s: %v", side, err)
		}
		fi, err := os.Stat(cache)
		if err != nil {
			t.Fatalf("%s: %v", side, err)
		}
		modes[side] = fi.Mode().Perm()
	}
	if modes["sdk"] != modes["ours"] {
		t.Errorf("recreated login cache file: SDK mode %v, ours %v", modes["sdk"], modes["ours"])
	}
}
