package oauth

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/oauth2"

	"github.com/myelin-run/myelin/internal/wholefile"
)

// Store keeps each server's tokens, and the client they were issued to, in
// one file per server URL under Dir, readable by the user alone (0600 in a
// 0700 directory). The OS keyring is not used: the file is the store.
// It must not be kept in a workspace: the workspace tools read files
// there, and a token is not for the model to read.
type Store struct {
	Dir string
}

// DefaultStore is the store under the user's home: ~/.myelin/mcp-tokens.
func DefaultStore() (*Store, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, fmt.Errorf("finding the home directory for MCP tokens: %w", err)
	}
	return &Store{Dir: filepath.Join(home, ".myelin", "mcp-tokens")}, nil
}

// Entry is what is kept for one server: the client and endpoints the
// token was obtained with, so that it can be refreshed in a later run,
// and the token.
type Entry struct {
	Server       string           `json:"server"` // the entry's name when saved (for people reading the file)
	URL          string           `json:"url"`
	ClientID     string           `json:"client_id"`
	ClientSecret string           `json:"client_secret,omitempty"`
	AuthURL      string           `json:"auth_url,omitempty"`
	TokenURL     string           `json:"token_url"`
	AuthStyle    oauth2.AuthStyle `json:"auth_style,omitempty"`
	Scopes       []string         `json:"scopes,omitempty"`
	Token        *oauth2.Token    `json:"token"`
}

// Path is the file that holds the tokens of the server at url.
func (s *Store) Path(url string) string {
	sum := sha256.Sum256([]byte(url))
	return filepath.Join(s.Dir, hex.EncodeToString(sum[:8])+".json")
}

// Load returns the entry kept for url; nil, nil when there is none.
func (s *Store) Load(url string) (*Entry, error) {
	data, err := os.ReadFile(s.Path(url))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the MCP tokens of %s: %w", url, err)
	}
	var e Entry
	if err := json.Unmarshal(data, &e); err != nil || e.URL != url || e.Token == nil {
		return nil, fmt.Errorf("the MCP tokens file %s is not valid; remove it and log in again", s.Path(url))
	}
	return &e, nil
}

// Save writes the entry in place of what was kept for its URL, whole
// (internal/wholefile): a new file of mode 0600, synced, renamed over the
// old, its directory synced after (best effort), so that a reader never
// sees half of it and a crash leaves the old tokens or the new, never an
// empty file (a directory just made here is not synced into its parent).
func (s *Store) Save(e *Entry) error {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return fmt.Errorf("keeping the MCP tokens of %s: %w", e.URL, err)
	}
	data, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return fmt.Errorf("keeping the MCP tokens of %s: %w", e.URL, err)
	}
	if err := wholefile.Replace(s.Path(e.URL), data, wholefile.Exactly(0o600)); err != nil {
		return fmt.Errorf("keeping the MCP tokens of %s: %w", e.URL, err)
	}
	return nil
}

// Remove forgets the tokens of url; there being none is no error.
func (s *Store) Remove(url string) error {
	if err := os.Remove(s.Path(url)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing the MCP tokens of %s: %w", url, err)
	}
	return nil
}

// config is the oauth2 config the entry's token was issued under.
func (e *Entry) config() *oauth2.Config {
	return &oauth2.Config{
		ClientID:     e.ClientID,
		ClientSecret: e.ClientSecret,
		Endpoint:     oauth2.Endpoint{AuthURL: e.AuthURL, TokenURL: e.TokenURL, AuthStyle: e.AuthStyle},
		Scopes:       e.Scopes,
	}
}
