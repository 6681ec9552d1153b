package permission

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/myelin-run/myelin/internal/wholefile"
)

// WorkspaceFile is where a workspace keeps its rules, relative to its
// root. Its rules may only narrow what the user allows.
const WorkspaceFile = ".myelin/permissions.json"

// UserFile is where the user keeps their rules:
// os.UserConfigDir()/myelin/permissions.json.
func UserFile() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("finding the user's configuration directory for the permission rules: %w", err)
	}
	return filepath.Join(dir, "myelin", "permissions.json"), nil
}

// file is a permissions file as written:
//
//	{"allow": ["go test *", "workspace--write"], "ask": [], "deny": ["rm *"]}
type file struct {
	Allow []string `json:"allow,omitempty"`
	Ask   []string `json:"ask,omitempty"`
	Deny  []string `json:"deny,omitempty"`
}

// ReadFile reads the rules of the permissions file at path: none, and no
// error, when there is no such file. A workspace's file (workspace set)
// may not allow: its allow rules are left out, each with a warning that
// says so. A file that is not such JSON, or holds a rule that cannot be
// read, is an error naming the file and what is wrong.
func ReadFile(path string, workspace bool) (rules []Rule, warnings []string, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading the permission rules: %w", err)
	}
	var f file
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, nil, fmt.Errorf("%s: %w (want {\"allow\": [RULE…], \"ask\": […], \"deny\": […]})", path, err)
	}
	for _, list := range []struct {
		name  string
		d     Decision
		texts []string
	}{{"allow", Allow, f.Allow}, {"ask", Ask, f.Ask}, {"deny", Deny, f.Deny}} {
		for i, text := range list.texts {
			source := fmt.Sprintf("%s %s[%d]", path, list.name, i)
			if workspace && list.d == Allow {
				warnings = append(warnings, fmt.Sprintf("%s: %q is not taken: a workspace's rules may only narrow what you allow (allow it in %s, or with --allow)", source, text, "your own permissions file"))
				continue
			}
			r, err := ParseRule(text, list.d, source)
			if err != nil {
				return nil, warnings, fmt.Errorf("%s: %w", source, err)
			}
			r.workspace = workspace
			rules = append(rules, r)
		}
	}
	return rules, warnings, nil
}

// Remember adds text as an allow rule to the permissions file at path
// (the user's: "always" answered to a question), making the file and its
// directory when there are none, and keeping the rules already there. A
// rule already allowed there is not added twice. The file is replaced
// whole (internal/wholefile), readable by the user alone (0600): synced
// before the rename, so a crash leaves the old rules or the new, never an
// empty file, and its directory synced after, best effort (a directory
// just made here is not synced into its parent).
func Remember(path, text string) error {
	if _, err := ParseRule(text, Allow, path); err != nil {
		return err
	}
	var f file
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("reading the permission rules to add %q: %w", text, err)
	default:
		if err := json.Unmarshal(b, &f); err != nil {
			return fmt.Errorf("%s: %w; %q was not added", path, err, text)
		}
	}
	for _, a := range f.Allow {
		if a == text {
			return nil
		}
	}
	f.Allow = append(f.Allow, text)
	out, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("adding %q to the permission rules: %w", text, err)
	}
	if err := wholefile.Replace(path, append(out, '\n'), wholefile.Exactly(0o600)); err != nil {
		return fmt.Errorf("adding %q to the permission rules: %w", text, err)
	}
	return nil
}
