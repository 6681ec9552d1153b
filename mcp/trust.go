package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/myelin-run/myelin/internal/wholefile"
)

// A workspace's own .mcp.json can be written by anyone who can write a
// file there: a cloned repository, or the model through a tool. Its
// servers are commands run as the user, so they start only once the user
// has approved that file's exact contents. Approvals are kept outside the
// workspace, keyed by the file's absolute path and the SHA-256 of its
// contents: a changed file is unapproved again.

// TrustFileName is the file, under the user's config directory's myelin/,
// that holds the approvals.
const TrustFileName = "trusted-mcp.json"

// TrustStore is the user's approvals of workspace MCP config files, kept
// in one JSON file outside any workspace. It must not be kept inside a
// workspace: what the model can write, it could approve.
type TrustStore struct {
	// Path is the approvals file.
	Path string
}

// DefaultTrustStore is the store in the user's config directory
// (os.UserConfigDir()/myelin/trusted-mcp.json; $XDG_CONFIG_HOME or
// ~/.config on Linux).
func DefaultTrustStore() (TrustStore, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return TrustStore{}, fmt.Errorf("finding the user's config directory for MCP approvals: %w", err)
	}
	return TrustStore{Path: filepath.Join(dir, "myelin", TrustFileName)}, nil
}

// trustDoc is the approvals file: each approved config file's absolute
// path and the SHA-256 of the contents approved.
type trustDoc struct {
	Approved map[string]string `json:"approved"`
}

// Digest is the key an approval records for a config file's contents.
func Digest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func (t TrustStore) read() (trustDoc, error) {
	doc := trustDoc{Approved: map[string]string{}}
	data, err := os.ReadFile(t.Path)
	if errors.Is(err, os.ErrNotExist) {
		return doc, nil
	}
	if err != nil {
		return doc, fmt.Errorf("reading the MCP approvals %s: %w", t.Path, err)
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return doc, fmt.Errorf("the MCP approvals %s are not valid (%w); remove the file and approve again with `myelin mcp trust`", t.Path, err)
	}
	if doc.Approved == nil {
		doc.Approved = map[string]string{}
	}
	return doc, nil
}

// Approved reports whether the config file at path (made absolute here)
// was approved with exactly these contents.
func (t TrustStore) Approved(path string, data []byte) (bool, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return false, err
	}
	doc, err := t.read()
	if err != nil {
		return false, err
	}
	return doc.Approved[abs] == Digest(data), nil
}

// Approve records that the config file at path (made absolute here) may
// start its servers while it holds exactly these contents; an earlier
// approval of the same path is replaced. The file is written whole
// (internal/wholefile: a new file, synced, renamed over it, its
// directory synced after, best effort), readable by the user alone
// (0600): a crash leaves the old approvals or the new, never an empty
// file (a directory just made here is not synced into its parent).
func (t TrustStore) Approve(path string, data []byte) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	doc, err := t.read()
	if err != nil {
		return err
	}
	doc.Approved[abs] = Digest(data)
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(t.Path), 0o700); err != nil {
		return fmt.Errorf("recording the MCP approval: %w", err)
	}
	if err := wholefile.Replace(t.Path, append(out, '\n'), wholefile.Exactly(0o600)); err != nil {
		return fmt.Errorf("recording the MCP approval in %s: %w", t.Path, err)
	}
	return nil
}

// Describe is one line saying what starting s runs: its name, and its
// command line (each word quoted when it needs to be) with its cwd (said
// to be in the workspace when it is relative to it: the model can write
// what runs there) and the names of the variables it sets, or its URL. It
// is what a user approves. A server without cwd runs in an empty directory
// of its own (workDir), which needs no line.
func Describe(s Server) string {
	if s.Problem != "" && s.Command == "" && s.URL == "" {
		return s.Name + ": " + s.Problem
	}
	if !s.Stdio() {
		return fmt.Sprintf("%s: %s (HTTP)", s.Name, s.URL) + rerunNote(s)
	}
	words := []string{quoteWord(s.Command)}
	for _, a := range s.Args {
		words = append(words, quoteWord(a))
	}
	line := fmt.Sprintf("%s: %s", s.Name, strings.Join(words, " "))
	if s.Cwd != "" {
		line += " (in " + quoteWord(s.Cwd)
		if !filepath.IsAbs(s.Cwd) && filepath.IsLocal(filepath.Clean(s.Cwd)) || filepath.Clean(s.Cwd) == "." {
			// It runs what the workspace holds there, which the model
			// can write: the one who approves it should know.
			line += " — in the workspace, whose files the model can write"
		}
		line += ")"
	}
	if len(s.Env) > 0 {
		keys := make([]string, 0, len(s.Env))
		for k := range s.Env {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		line += " (sets " + strings.Join(keys, ", ") + ")"
	}
	return line + sandboxNote(s) + rerunNote(s)
}

// rerunNote says what an entry's "rerun" asks, for the one who approves
// it: true has myelin run the server's calls again after a crash, whatever
// the tools say of themselves.
func rerunNote(s Server) string {
	if s.Rerun != nil && *s.Rerun {
		return " (its tools' calls are run again after a crash: \"rerun\": true)"
	}
	return ""
}

// quoteWord gives w as it is when it is plainly one word, and Go-quoted
// otherwise, so that spaces, quotes and control characters show.
func quoteWord(w string) string {
	if w != "" && !strings.ContainsFunc(w, func(r rune) bool {
		return r <= ' ' || r == '"' || r == '\'' || r == '\\' || r == '$' || r == '`' || r == ';' || r == '|' || r == '&' || r > '~'
	}) {
		return w
	}
	return strconv.Quote(w)
}
