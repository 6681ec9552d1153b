package awsprofile

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/google/go-cmp/cmp"
)

// The pieces random files are made of: the lines and line shapes that
// matter to the dialect and to profile resolution.
var (
	randHeaders = []string{"[default]", "[profile default]", "[profile a]", "[a]", "[profile b]", "[b]", "[c]",
		"[profile c]", "[sso-session s]", "[services svc]", "[ profile  a ]", "[]", "[DEFAULT]",
		"[profile a] ; c", "[profile a#x]", "  [profile b]", "[profile profile a]", "[profile w]", "[w]"}
	randKeys = []string{"region", "role_arn", "source_profile", "aws_access_key_id", "aws_secret_access_key",
		"aws_session_token", "aws_account_id", "credential_process", "credential_source",
		"web_identity_token_file", "sso_session", "sso_region", "sso_start_url", "sso_account_id",
		"sso_role_name", "services", "endpoint_url", "max_attempts", "duration_seconds", "login_session",
		"auth_scheme_preference", "use_fips_endpoint", "ec2_metadata_v1_disabled", "sts", "Region",
		"ignore_configured_endpoint_urls", "retry_mode", "external_id", "ca_bundle"}
	randValues = []string{"a", "b", "c", "w", " s ", "default", "s", "svc", "x", "", "3", "0x10", "true", "False",
		"'q'", `"dq"`, "v # c", "v;c", "v ; c", "k=v", "http://h:1", " spaced ", "standard", "sigv4, bearer"}
	randSeps = []string{" = ", "=", ": ", " =", "\t=\t"}
)

func randomIni(r *rand.Rand) string {
	var b strings.Builder
	n := r.IntN(14)
	for i := 0; i < n; i++ {
		var line string
		switch r.IntN(10) {
		case 0, 1:
			line = randHeaders[r.IntN(len(randHeaders))]
		case 2:
			line = []string{"", "# c", "  ; c", "junk", "   "}[r.IntN(5)]
		case 3:
			line = "  " + randKeys[r.IntN(len(randKeys))] + randSeps[r.IntN(len(randSeps))] + randValues[r.IntN(len(randValues))]
		case 4:
			line = "\t" + randValues[r.IntN(len(randValues))]
		default:
			line = randKeys[r.IntN(len(randKeys))] + randSeps[r.IntN(len(randSeps))] + randValues[r.IntN(len(randValues))]
		}
		if r.IntN(8) == 0 {
			line += "\r"
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// compareWithSDK loads profile from the two files with the SDK and with
// Load, and reports any difference.
func compareWithSDK(t *testing.T, profile, cfgPath, credPath string) {
	t.Helper()
	sdk, sdkErr := config.LoadSharedConfigProfile(context.Background(), profile, func(o *config.LoadSharedConfigOptions) {
		o.ConfigFiles = []string{cfgPath}
		o.CredentialsFiles = []string{credPath}
	})
	got, err := Load(profile, []string{cfgPath}, []string{credPath})
	if (sdkErr != nil) != (err != nil) {
		t.Fatalf("profile %q: error: SDK %v, ours %v", profile, sdkErr, err)
	}
	if sdkErr != nil {
		_, sdkNotExist := sdkErr.(config.SharedConfigProfileNotExistError)
		var nf *ProfileNotExistError
		if errors.As(err, &nf) != sdkNotExist {
			t.Fatalf("profile %q: not-exist: SDK %v, ours %v", profile, sdkErr, err)
		}
		return
	}
	if diff := cmp.Diff(fromSDK(&sdk), &got); diff != "" {
		t.Fatalf("profile %q differs from the SDK's (-SDK +ours):\n%s", profile, diff)
	}
}

// TestLoadMatchesTheSDKOnRandomFiles compares Load with the SDK on
// a thousand pairs of files made at random (fixed seed) from the lines that
// matter, for every profile name they may hold.
func TestLoadMatchesTheSDKOnRandomFiles(t *testing.T) {
	isolateEnv(t)
	r := rand.New(rand.NewPCG(34, 2))
	dir := t.TempDir()
	cfgPath, credPath := filepath.Join(dir, "config"), filepath.Join(dir, "credentials")
	for i := 0; i < 1000; i++ {
		cfg, creds := randomIni(r), randomIni(r)
		if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(credPath, []byte(creds), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"default", "a", "b", "c", "w", "profile a", ""} {
			t.Run("", func(t *testing.T) {
				defer func() {
					if t.Failed() {
						t.Logf("config:\n%s\ncredentials:\n%s", cfg, creds)
					}
				}()
				compareWithSDK(t, p, cfgPath, credPath)
			})
		}
	}
}

// FuzzLoadMatchesTheSDK is the same comparison on fuzzed file texts
// (go test -fuzz=FuzzLoadMatchesTheSDK). Inputs on which the SDK panics
// (a value that is one quote character) are skipped.
func FuzzLoadMatchesTheSDK(f *testing.F) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20; i++ {
		f.Add(randomIni(r), randomIni(r), "a")
	}
	f.Fuzz(func(t *testing.T, cfg, creds, profile string) {
		dir := t.TempDir()
		cfgPath, credPath := filepath.Join(dir, "config"), filepath.Join(dir, "credentials")
		if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(credPath, []byte(creds), 0o600); err != nil {
			t.Fatal(err)
		}
		panicked := func() (p bool) {
			defer func() { p = recover() != nil }()
			_, _ = config.LoadSharedConfigProfile(context.Background(), profile, func(o *config.LoadSharedConfigOptions) {
				o.ConfigFiles = []string{cfgPath}
				o.CredentialsFiles = []string{credPath}
			})
			return false
		}()
		if panicked {
			t.Skip("the SDK panics on this input")
		}
		compareWithSDK(t, profile, cfgPath, credPath)
	})
}

// TestLoadMatchesTheSDKOnTheSDKsOwnTestFiles compares Load with the SDK on
// the config module's own test files (config/testdata and
// config/internal/ini/testdata/valid, read from the module cache, not
// copied), each as config file and as credentials file, and the
// shared_config/shared_credentials pair, for every profile they name.
func TestLoadMatchesTheSDKOnTheSDKsOwnTestFiles(t *testing.T) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/aws/aws-sdk-go-v2/config")
	cmd.Env = append(os.Environ(), "GOPROXY=off") // the cache only, never the network
	out, err := cmd.Output()
	dir := strings.TrimSpace(string(out))
	if err != nil || dir == "" {
		t.Skipf("the SDK's config module is not in the module cache: %v", err)
	}
	var files []string
	for _, sub := range []string{"testdata", filepath.Join("internal", "ini", "testdata", "valid")} {
		entries, err := os.ReadDir(filepath.Join(dir, sub))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !e.IsDir() && !strings.HasSuffix(e.Name(), ".json") && !strings.HasSuffix(e.Name(), "_expected") {
				files = append(files, filepath.Join(dir, sub, e.Name()))
			}
		}
	}
	if len(files) < 20 {
		t.Fatalf("only %d SDK test files found in %s", len(files), dir)
	}
	isolateEnv(t)
	none := filepath.Join(t.TempDir(), "none")
	pairs := [][2]string{{filepath.Join(dir, "testdata", "shared_config"), filepath.Join(dir, "testdata", "shared_credentials")}}
	for _, f := range files {
		pairs = append(pairs, [2]string{f, none}, [2]string{none, f})
	}
	for _, pair := range pairs {
		names := map[string]bool{"default": true}
		for _, f := range pair {
			b, _ := os.ReadFile(f)
			for _, line := range strings.Split(string(b), "\n") {
				if name, ok := sectionHeader(line); ok {
					names[name] = true
					if _, rest, ok := strings.Cut(name, " "); ok {
						names[rest] = true
					}
				}
			}
		}
		for name := range names {
			t.Run(filepath.Base(pair[0])+"+"+filepath.Base(pair[1])+"/"+name, func(t *testing.T) {
				compareWithSDK(t, name, pair[0], pair[1])
			})
		}
	}
}
