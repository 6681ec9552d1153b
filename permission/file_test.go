package permission

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAWorkspaceFilesAllowIsNotTakenAndSaysSo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "permissions.json")
	if err := os.WriteFile(path, []byte(`{"allow":["shell--run"],"ask":["workspace--write"],"deny":["rm *"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	rules, warnings, err := ReadFile(path, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) != 2 || rules[0].Decision != Ask || rules[1].Decision != Deny {
		t.Fatalf("rules %+v; want the ask and the deny only", rules)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], `"shell--run" is not taken: a workspace's rules may only narrow`) {
		t.Fatalf("warnings %q", warnings)
	}
	if rules[1].Source != path+" deny[0]" {
		t.Fatalf("source %q", rules[1].Source)
	}
	user, _, err := ReadFile(path, false)
	if err != nil || len(user) != 3 {
		t.Fatalf("the user's file: %d rules, %v", len(user), err)
	}
}

func TestABadFileIsAnErrorNamingItAndNoFileIsNone(t *testing.T) {
	dir := t.TempDir()
	if rules, _, err := ReadFile(filepath.Join(dir, "none.json"), false); err != nil || rules != nil {
		t.Fatalf("no file: %v, %v", rules, err)
	}
	for content, want := range map[string]string{
		`{"alow":["x"]}`:         `unknown field "alow"`,
		`{"allow":"go test *"}`:  "cannot unmarshal",
		`{"deny":["go test ["]}`: `deny[0]: "go test [": the word "[" is not a valid glob`,
		`not json`:               "invalid character",
	} {
		path := filepath.Join(dir, "p.json")
		os.WriteFile(path, []byte(content), 0o644)
		if _, _, err := ReadFile(path, false); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v; want an error naming the file and %q", content, err, want)
		}
	}
}

func TestRememberAddsAnAllowRuleOnceAndKeepsTheRest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "myelin", "permissions.json")
	for _, text := range []string{"go test *", "go test *", "workspace--write"} {
		if err := Remember(path, text); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(path+".x", nil, 0o600)
	rules, _, err := ReadFile(path, false)
	if err != nil || len(rules) != 2 || rules[0].Text != "go test *" || rules[1].Text != "workspace--write" {
		t.Fatalf("rules %+v, %v", rules, err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", st.Mode())
	}
	if err := Remember(path, ""); err == nil {
		t.Fatal("an empty rule was remembered")
	}
}
