package awssso

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials/ssocreds"
	"github.com/aws/smithy-go/auth/bearer"
)

// TestCachedTokenFilepathIsTheSDKs compares the cache file's path with
// ssocreds.StandardCachedTokenFilepath for session names and start URLs.
func TestCachedTokenFilepathIsTheSDKs(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	for _, key := range []string{"my-sso", "https://example.awsapps.com/start", "", "sessión ünïcode", "https://d-123.awsapps.com/start/#/"} {
		want, err := ssocreds.StandardCachedTokenFilepath(key)
		if err != nil {
			t.Fatal(err)
		}
		got, err := CachedTokenFilepath(key)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("key %q: %s, SDK %s", key, got, want)
		}
	}
}

// TestCachedTokenFilepathOfAKnownKey pins the path independently of the
// SDK: sha1("my-sso") under $HOME/.aws/sso/cache.
func TestCachedTokenFilepathOfAKnownKey(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	got, err := CachedTokenFilepath("my-sso")
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(home, ".aws", "sso", "cache", "0ad374308c5a4e22f723adf10145eafad7c4031c.json")
	if got != want {
		t.Errorf("%s, want %s", got, want)
	}
}

// tokenOutcome is what RetrieveBearerToken gave on one side.
type tokenOutcome struct {
	token bearer.Token
	err   error
	oidc  []seen
}

// retrieveToken runs one side's sso-session token provider over file.
func retrieveToken(t *testing.T, file string, oidc []reply, sdk bool) tokenOutcome {
	t.Helper()
	var content []byte
	if file != "" {
		content = fixture(t, file)
	}
	path := homeWithToken(t, sessionName, content, 0o600)
	f := newFake(t, oidc...)
	var p bearer.TokenProvider
	if sdk {
		p = ssocreds.NewSSOTokenProvider(sdkOIDC(f), path)
	} else {
		p = NewTokenProvider(ourClient(f), path)
	}
	tok, err := p.RetrieveBearerToken(context.Background())
	return tokenOutcome{token: tok, err: err, oidc: f.requests()}
}

// TestCachedTokenReadingIsTheSDKs runs the SDK's token provider and ours
// over odd cache files: the same error-or-not, token and expiry.
func TestCachedTokenReadingIsTheSDKs(t *testing.T) {
	files := []string{"valid.json", "valid_non_utc.json", "valid_fraction.json", "valid_legacy.json",
		"malformed.json", "not_object.json", "null.json", "missing_access.json", "missing_expires.json",
		"empty_access.json", "zero_expires.json", "bad_expires.json", "number_access.json", "null_client.json", ""}
	for _, file := range files {
		t.Run(file, func(t *testing.T) {
			sdk := retrieveToken(t, file, []reply{createTokenOK}, true)
			ours := retrieveToken(t, file, []reply{createTokenOK}, false)
			if (sdk.err != nil) != (ours.err != nil) {
				t.Fatalf("error: SDK %v, ours %v", sdk.err, ours.err)
			}
			if sdk.token.Value != ours.token.Value || sdk.token.CanExpire != ours.token.CanExpire || !sdk.token.Expires.Equal(ours.token.Expires) {
				t.Errorf("token: SDK %+v, ours %+v", sdk.token, ours.token)
			}
			if len(sdk.oidc) != 0 || len(ours.oidc) != 0 {
				t.Errorf("refresh requests: SDK %d, ours %d, want none", len(sdk.oidc), len(ours.oidc))
			}
		})
	}
}

// TestRefreshedBearerTokenIsTheSDKs compares the token the provider gives
// after a refresh: the new access token, expiring expiresIn from now.
func TestRefreshedBearerTokenIsTheSDKs(t *testing.T) {
	start := time.Now()
	sdk := retrieveToken(t, "expired.json", []reply{createTokenOK}, true)
	ours := retrieveToken(t, "expired.json", []reply{createTokenOK}, false)
	end := time.Now()
	if sdk.err != nil || ours.err != nil {
		t.Fatalf("errors: SDK %v, ours %v", sdk.err, ours.err)
	}
	for side, o := range map[string]tokenOutcome{"SDK": sdk, "ours": ours} {
		if o.token.Value != "new-access" || !o.token.CanExpire {
			t.Errorf("%s: token %+v", side, o.token)
		}
		if lo, hi := start.Add(time.Hour), end.Add(time.Hour); o.token.Expires.Before(lo) || o.token.Expires.After(hi) {
			t.Errorf("%s: expires %s, want within [%s, %s]", side, o.token.Expires, lo, hi)
		}
		if len(o.oidc) != 1 {
			t.Errorf("%s: %d refresh requests", side, len(o.oidc))
		}
	}
}

// TestConcurrentRetrievesRefreshOnce pins that concurrent callers of one
// provider holding an expired token cause a single CreateToken: the
// others read the rewritten file.
func TestConcurrentRetrievesRefreshOnce(t *testing.T) {
	path := homeWithToken(t, sessionName, fixture(t, "expired.json"), 0o600)
	f := newFake(t, createTokenOK)
	p := NewTokenProvider(ourClient(f), path)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok, err := p.RetrieveBearerToken(context.Background())
			if err == nil && tok.Value != "new-access" {
				t.Errorf("token %q", tok.Value)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := len(f.requests()); n != 1 {
		t.Errorf("%d CreateToken requests, want 1", n)
	}
}

// TestFailedRefreshLeavesTheFileAlone pins that a refused refresh neither
// changes the cache file nor leaves a temporary file beside it.
func TestFailedRefreshLeavesTheFileAlone(t *testing.T) {
	path := homeWithToken(t, sessionName, fixture(t, "expired.json"), 0o600)
	f := newFake(t, invalidGrant)
	if _, err := NewTokenProvider(ourClient(f), path).RetrieveBearerToken(context.Background()); err == nil {
		t.Fatal("no error")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != string(fixture(t, "expired.json")) {
		t.Errorf("file changed: %s", b)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("cache directory holds %d files, want 1", len(entries))
	}
}

// TestFailedRewriteLeavesNoTemporaryFile pins the failure of the
// rewrite's rename (the cache path is a directory): an error, and no
// .tmp- file left beside it.
func TestFailedRewriteLeavesNoTemporaryFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "token.json")
	if err := os.MkdirAll(filepath.Join(path, "occupied"), 0o700); err != nil {
		t.Fatal(err)
	}
	tok := cachedToken{accessToken: "a", expiresAt: time.Now()}
	if err := storeCachedToken(path, tok, 0o600); err == nil {
		t.Fatal("no error")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want 1", len(entries))
	}
}
