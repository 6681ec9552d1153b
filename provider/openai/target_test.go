package openai

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/internal/send"
	"github.com/myelin-run/myelin/provider"
)

// openAIVars are the variables the SDK reads from the environment.
var openAIVars = []string{"OPENAI_API_KEY", "OPENAI_ADMIN_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "OPENAI_WEBHOOK_SECRET", "OPENAI_CUSTOM_HEADERS"}

// environ sets the variables of env and unsets the other openAIVars, for
// the test's time.
func environ(t *testing.T, env map[string]string) {
	t.Helper()
	for _, k := range openAIVars {
		t.Setenv(k, "") // restored after the test
		if v, ok := env[k]; ok {
			t.Setenv(k, v)
		} else {
			os.Unsetenv(k)
		}
	}
}

// targetDiff is what differs between the targets got and want, one line
// each: the method, the URL, the host, each header by name.
func targetDiff(got, want send.Target) []string {
	var diff []string
	if got.Method != want.Method {
		diff = append(diff, fmt.Sprintf("method %q, the SDK's %q", got.Method, want.Method))
	}
	if got.URL.String() != want.URL.String() || !reflect.DeepEqual(*got.URL, *want.URL) {
		diff = append(diff, fmt.Sprintf("URL %s (%#v), the SDK's %s (%#v)", got.URL, *got.URL, want.URL, *want.URL))
	}
	if got.Host != want.Host {
		diff = append(diff, fmt.Sprintf("host %q, the SDK's %q", got.Host, want.Host))
	}
	names := map[string]bool{}
	for k := range got.Header {
		names[k] = true
	}
	for k := range want.Header {
		names[k] = true
	}
	sorted := make([]string, 0, len(names))
	for k := range names {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		g, w := got.Header[k], want.Header[k]
		if !reflect.DeepEqual(g, w) {
			diff = append(diff, fmt.Sprintf("header %s: %q, the SDK's %q", k, g, w))
		}
	}
	return diff
}

func TestTheTargetIsTheSDKs(t *testing.T) {
	bases := []string{
		"", // the default
		"https://api.openai.com/v1",
		"https://openrouter.ai/api/v1",
		"http://localhost:11434/v1/",
		"http://127.0.0.1:8080",
		"http://127.0.0.1:8080/",
		"https://res.openai.azure.com/openai/deployments/gpt?api-version=2025-01-01",
		"https://example.com/a%20b/v1",
	}
	envs := map[string]map[string]string{
		"no variables":              {},
		"organization and project":  {"OPENAI_ORG_ID": "org-1", "OPENAI_PROJECT_ID": "proj_1"},
		"an empty organization":     {"OPENAI_ORG_ID": ""},
		"another key in the env":    {"OPENAI_API_KEY": "sk-env", "OPENAI_ADMIN_KEY": "sk-admin", "OPENAI_WEBHOOK_SECRET": "whsec"},
		"a base URL in the env":     {"OPENAI_BASE_URL": "http://10.0.0.1:9000/v1"},
		"custom headers":            {"OPENAI_CUSTOM_HEADERS": "X-Extra: one\r\nx-two:two: parts \n no colon\n\nUser-Agent: mine"},
		"custom headers over yours": {"OPENAI_CUSTOM_HEADERS": "Authorization: Bearer other\nContent-Type: text/plain\nAccept: */*\nOpenAI-Organization: org-2", "OPENAI_ORG_ID": "org-1"},
		"a timeout header":          {"OPENAI_CUSTOM_HEADERS": "X-Stainless-Timeout: 30\nX-Stainless-Retry-Count: 7"},
		"a zero timeout header":     {"OPENAI_CUSTOM_HEADERS": "X-Stainless-Timeout: 0"},
	}
	for envName, env := range envs {
		for _, base := range bases {
			for _, path := range []string{"chat/completions", "responses"} {
				t.Run(envName+"/"+base+"/"+path, func(t *testing.T) {
					environ(t, env)
					sameTarget(t, provider.Endpoint{APIKey: "sk-test", BaseURL: base, MaxRetries: 2}, path)
				})
			}
		}
	}
}

// Without a key (never from New: FromEnv wants one), an Authorization
// header of OPENAI_CUSTOM_HEADERS stays, unless OPENAI_ADMIN_KEY is set,
// as for the SDK.
func TestWithoutAKeyTheAuthorizationIsTheSDKs(t *testing.T) {
	for name, env := range map[string]map[string]string{
		"none":                  {},
		"a custom header":       {"OPENAI_CUSTOM_HEADERS": "Authorization: Basic abc"},
		"an admin key":          {"OPENAI_ADMIN_KEY": "sk-admin"},
		"both":                  {"OPENAI_ADMIN_KEY": "sk-admin", "OPENAI_CUSTOM_HEADERS": "Authorization: Basic abc"},
		"a key in the env only": {"OPENAI_API_KEY": "sk-env"},
	} {
		t.Run(name, func(t *testing.T) {
			environ(t, env)
			sameTarget(t, provider.Endpoint{BaseURL: "http://127.0.0.1:1/v1"}, path)
		})
	}
}

// OPENAI_BASE_URL set and empty is the default base, as the Config zero
// value says; the SDK took it for a base URL and posted to a relative
// URL, which no HTTP client sends (the one place the two differ).
func TestAnEmptyBaseURLVariableIsTheDefault(t *testing.T) {
	environ(t, map[string]string{"OPENAI_BASE_URL": ""})
	got, err := Target(provider.Endpoint{APIKey: "k"}, path)
	if err != nil {
		t.Fatal(err)
	}
	if got.URL.String() != "https://api.openai.com/v1/chat/completions" {
		t.Fatalf("URL %s, want the default base's", got.URL)
	}
	if want, err := sdkTarget(sdkClient(provider.Endpoint{APIKey: "k"}, nil), path); err != nil || want.URL.IsAbs() {
		t.Logf("the SDK now posts to %v (err %v): this test's note on it is out of date", want.URL, err)
	}
}

func TestABaseURLThatIsNotOneIsAnError(t *testing.T) {
	if _, err := Target(provider.Endpoint{APIKey: "k", BaseURL: "http://[::1"}, path); err == nil || !strings.Contains(err.Error(), "openai: the base URL") {
		t.Fatalf("err = %v, want one naming the base URL", err)
	}
}

// The version the headers name is the openai-go of go.mod (the tests'
// reference): a bump of the SDK fails here until sdkVersion follows it,
// and TestTheTargetIsTheSDKs until every header does.
func TestTheSDKVersionIsGoMods(t *testing.T) {
	f, err := os.Open("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var version string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "github.com/openai/openai-go/v3" {
			version = fields[1]
		}
	}
	if version == "" {
		t.Fatal("go.mod requires no github.com/openai/openai-go/v3")
	}
	if version != "v"+sdkVersion {
		t.Fatalf("sdkVersion is %s, go.mod's openai-go is %s: the headers name the SDK whose requests they copy", sdkVersion, version)
	}
}

// The binary does not link openai-go, with or without the grpcnotrace
// tag: only the tests use it, as the reference (issue 34).
func TestTheBinaryDoesNotLinkOpenAIGo(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	for _, tags := range []string{"", "grpcnotrace"} {
		cmd := exec.Command("go", "list", "-deps", "-tags", tags, "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "github.com/myelin-run/myelin/cmd/myelin")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list (tags %q): %v", tags, err)
		}
		for _, line := range strings.Split(string(out), "\n") {
			pkg, imports, _ := strings.Cut(line, " ")
			if strings.HasPrefix(pkg, "github.com/openai/openai-go") {
				continue
			}
			for _, imp := range strings.Fields(imports) {
				if strings.HasPrefix(imp, "github.com/openai/openai-go") {
					t.Errorf("tags %q: %s imports %s", tags, pkg, imp)
				}
			}
		}
	}
}

// sameTarget fails t unless Target(ep, path) is the target the SDK's
// probe reads for the same endpoint, in the environment as it is now.
func sameTarget(t *testing.T, ep provider.Endpoint, path string) {
	t.Helper()
	want, err := sdkTarget(sdkClient(ep, nil), path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Target(ep, path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := targetDiff(got, want); len(diff) > 0 {
		t.Fatalf("the target differs from the SDK's:\n%s", strings.Join(diff, "\n"))
	}
}
