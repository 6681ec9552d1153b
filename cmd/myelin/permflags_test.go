package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// userRules writes the user's permissions file (under XDG_CONFIG_HOME,
// set to a directory of the test's own) and returns its path.
func userRules(t *testing.T, content string) string {
	t.Helper()
	config := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", config)
	path := filepath.Join(config, "myelin", "permissions.json")
	if content == "" {
		return path
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestABadRuleIsAUsageErrorNamingTheFlagAndWhatIsWrong(t *testing.T) {
	userRules(t, "")
	dir := workspaceWith(t, nil)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"run", "--allow", " ", "hi"}, []string{"-allow", "an empty rule"}},
		{[]string{"run", "--deny", "go(test)", "hi"}, []string{"-deny", "only shell--run's calls are matched by command"}},
		{[]string{"chat", "--ask", "github--*[sometimesHint]"}, []string{"-ask", "readOnlyHint or destructiveHint"}},
		{[]string{"serve", "--allow", "shell--run(go [)"}, []string{"-allow", `"[" is not a valid glob`}},
	} {
		_, errOut, code := cli(t, append(tc.args, "--workspace", dir)...)
		if code != exitUsage {
			t.Errorf("%q: exit %d, want %d: %s", tc.args, code, exitUsage, errOut)
		}
		for _, w := range tc.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%q: no %q in %q", tc.args, w, errOut)
			}
		}
	}
}

func TestABadRulesFileIsAUsageErrorNamingTheFileAndTheRule(t *testing.T) {
	dir := workspaceWith(t, nil)
	user := userRules(t, `{"allow": ["go test *"], "deny": ["shell--run(rm [)"]}`)
	_, errOut, code := cli(t, "run", "--workspace", dir, "hi")
	if code != exitUsage || !strings.Contains(errOut, user+" deny[0]") || !strings.Contains(errOut, `"[" is not a valid glob`) {
		t.Errorf("a bad rule in the user's file: exit %d, stderr %q; want %d naming %s deny[0]", code, errOut, exitUsage, user)
	}
	userRules(t, `{"allow": "go test *"}`)
	if _, errOut, code := cli(t, "run", "--workspace", dir, "hi"); code != exitUsage || !strings.Contains(errOut, "your permission rules") || !strings.Contains(errOut, `want {"allow": [RULE…]`) {
		t.Errorf("a user's file that is not the format: exit %d, stderr %q", code, errOut)
	}
	userRules(t, "")
	ws := workspaceWith(t, map[string]string{".myelin/permissions.json": `{"ask": ["workspace--*"], "deny": [""]}`})
	_, errOut, code = cli(t, "chat", "--workspace", ws)
	if code != exitUsage || !strings.Contains(errOut, "the workspace's permission rules") || !strings.Contains(errOut, filepath.Join(ws, ".myelin", "permissions.json")+" deny[0]") {
		t.Errorf("a bad rule in the workspace's file: exit %d, stderr %q", code, errOut)
	}
}
