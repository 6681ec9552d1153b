package awssso

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/myelin-run/myelin/internal/wholefile"
	"github.com/myelin-run/myelin/provider/bedrock/internal/awsprofile"
)

// CachedTokenFilepath is where `aws sso login` caches the token for key:
// ~/.aws/sso/cache/<lower-case hex SHA-1 of key>.json, key being the
// sso-session's name, or the start URL of a legacy profile. The home
// directory is os.UserHomeDir's, else the current user's, as the SDK's.
// It reads no file.
func CachedTokenFilepath(key string) (string, error) {
	home := awsprofile.HomeDir()
	if home == "" {
		return "", errors.New("sso token cache: no home directory for the cached token file")
	}
	sum := sha1.Sum([]byte(key))
	return filepath.Join(home, ".aws", "sso", "cache", hex.EncodeToString(sum[:])+".json"), nil
}

// cachedToken is the cache file's content. The fields the provider uses
// are decoded; every other member (registrationExpiresAt, region,
// startUrl, ...) is kept as decoded and written back unchanged.
type cachedToken struct {
	accessToken  string
	expiresAt    time.Time // zero when absent
	refreshToken string
	clientID     string
	clientSecret string
	others       map[string]any
}

// The cache file's members the provider reads; the rest are others.
const (
	fieldAccessToken  = "accessToken"
	fieldExpiresAt    = "expiresAt"
	fieldRefreshToken = "refreshToken"
	fieldClientID     = "clientId"
	fieldClientSecret = "clientSecret"
)

// decodeCachedToken reads the members as the SDK does: a document that is
// valid JSON but no object reads as empty (the SDK's decoder ignores that
// failure); a known member that is not a string, or an expiresAt that is
// not RFC 3339, is an error naming the member (never its value).
func decodeCachedToken(b []byte) (cachedToken, error) {
	if !json.Valid(b) {
		return cachedToken{}, errors.New("not valid JSON")
	}
	var members map[string]any
	if err := json.Unmarshal(b, &members); err != nil {
		members = nil // valid JSON, not an object: empty, as the SDK
	}
	t := cachedToken{others: map[string]any{}}
	for k, v := range members {
		var target *string
		switch k {
		case fieldAccessToken:
			target = &t.accessToken
		case fieldRefreshToken:
			target = &t.refreshToken
		case fieldClientID:
			target = &t.clientID
		case fieldClientSecret:
			target = &t.clientSecret
		case fieldExpiresAt:
			s, ok := v.(string)
			if !ok {
				return cachedToken{}, fmt.Errorf("member %q is %s, not a string", k, jsonKind(v))
			}
			at, err := time.Parse(time.RFC3339, s)
			if err != nil {
				return cachedToken{}, fmt.Errorf("member %q is not an RFC 3339 time: %w", k, err)
			}
			t.expiresAt = at
			continue
		default:
			t.others[k] = v
			continue
		}
		s, ok := v.(string)
		if !ok {
			return cachedToken{}, fmt.Errorf("member %q is %s, not a string", k, jsonKind(v))
		}
		*target = s
	}
	return t, nil
}

// jsonKind names the JSON kind of a decoded value, for an error.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return "a string"
}

// encode is the file the SDK writes for t: one JSON object with the
// members sorted by name, the empty known strings left out, expiresAt in
// UTC to the second, then a newline.
func (t cachedToken) encode() ([]byte, error) {
	members := make(map[string]any, len(t.others)+5)
	known := map[string]string{
		fieldAccessToken:  t.accessToken,
		fieldRefreshToken: t.refreshToken,
		fieldClientID:     t.clientID,
		fieldClientSecret: t.clientSecret,
	}
	for k, v := range known {
		if v != "" {
			members[k] = v
		}
	}
	if !t.expiresAt.IsZero() {
		members[fieldExpiresAt] = t.expiresAt.UTC().Format(time.RFC3339)
	}
	for k, v := range t.others {
		if _, dup := members[k]; dup {
			return nil, fmt.Errorf("member %q is both known and unknown", k)
		}
		members[k] = v
	}
	b, err := json.Marshal(members)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// loadCachedToken reads the cache file at path; a token without an
// accessToken or an expiresAt is an error, as in the SDK.
func loadCachedToken(path string) (cachedToken, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return cachedToken{}, fmt.Errorf("read cached SSO token file: %w", err)
	}
	t, err := decodeCachedToken(b)
	if err != nil {
		return cachedToken{}, fmt.Errorf("parse cached SSO token file %s: %w", path, err)
	}
	if t.accessToken == "" || t.expiresAt.IsZero() {
		return cachedToken{}, fmt.Errorf("cached SSO token file %s must contain accessToken and expiresAt", path)
	}
	return t, nil
}

// storeCachedToken replaces the file at path with t, as the SDK does
// (a new file with mode, the old file's, less the umask, renamed over
// path), through wholefile.Replace, which also syncs the new file before
// the rename and the directory after, and leaves no temporary file when
// a step fails.
func storeCachedToken(path string, t cachedToken, mode os.FileMode) error {
	b, err := t.encode()
	if err != nil {
		return fmt.Errorf("encode cached SSO token for %s: %w", path, err)
	}
	if err := wholefile.Replace(path, b, wholefile.Created(mode)); err != nil {
		return fmt.Errorf("replace cached SSO token file: %w", err)
	}
	return nil
}
