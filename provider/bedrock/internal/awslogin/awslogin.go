// Package awslogin is the credentials of an `aws login` session (a profile
// with login_session), as the AWS SDK's credentials/logincreds gives them
// when config.LoadDefaultConfig resolves such a profile: the cache file
// the AWS CLI wrote (AWS_LOGIN_CACHE_DIRECTORY or ~/.aws/login/cache,
// named by the SHA-256 of the session), its credentials returned as they
// are while unexpired, else a refresh against the sign-in service's
// CreateOAuth2Token (POST /v1/token, a refresh-token grant carrying a
// DPoP proof signed with the cache's key) and the cache rewritten.
//
// It exists so that bedrock does not link the SDK's sign-in service
// client. It must not import aws-sdk-go-v2's config, credentials/logincreds
// or any service package from non-test code, must not start a login (it
// only refreshes one the CLI made), and must not put a key, token or
// secret in an error.
package awslogin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/myelin-run/myelin/internal/wholefile"
	"github.com/myelin-run/myelin/provider/bedrock/internal/awscall"
	"github.com/myelin-run/myelin/provider/bedrock/internal/awsprofile"
)

// ProviderName is the Source of the credentials this package returns, the
// SDK's logincreds.ProviderName.
const ProviderName = "LoginProvider"

// Client is how the provider reaches the sign-in service, as awscall
// sends every AWS call: its endpoint (awsendpoint's signin, such as
// https://us-east-1.signin.aws.amazon.com; /v1/token is joined to its
// path), HTTP client and retry policy. It does not resolve the endpoint
// itself: the chain gives it, or in Err why it could not. An empty
// endpoint or an Err is an error only when a refresh is needed.
type Client = awscall.Client

// Options are what the chain decides beyond the client and the path.
type Options struct {
	// RestrictPermissions creates a missing cache file 0600 instead of
	// 0666 (less the umask) when a refresh writes it; an existing file
	// keeps its mode either way. The chain always sets it, whatever
	// AWS_RESTRICT_FILE_PERMISSIONS says, for the file holds a refresh
	// token and a private key; the SDK's loader restricts it too (it
	// builds logincreds before it reads that setting).
	RestrictPermissions bool
}

// CachedTokenFilepath is the cache file of login session session: in dir,
// or ~/.aws/login/cache when dir is empty (config passes
// AWS_LOGIN_CACHE_DIRECTORY), named by the lower-case hex SHA-256 of the
// session with surrounding spaces trimmed, plus ".json". It reads no file.
func CachedTokenFilepath(session, dir string) (string, error) {
	if dir == "" {
		home := awsprofile.HomeDir()
		if home == "" {
			return "", errors.New("login cache path: user home dir is blank")
		}
		dir = filepath.Join(home, ".aws", "login", "cache")
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(session)))
	return filepath.Join(dir, hex.EncodeToString(sum[:])+".json"), nil
}

// New is the credentials provider of the login session cached at
// tokenPath. It reads nothing until Retrieve; each Retrieve reads the file
// again (another process may have refreshed it). Wrap it in
// aws.NewCredentialsCache: it caches nothing itself.
func New(c Client, tokenPath string, o Options) aws.CredentialsProvider {
	return &provider{client: c, path: tokenPath, opts: o}
}

type provider struct {
	client Client
	path   string
	opts   Options
	// mu keeps two refreshes of this provider from racing on the file.
	mu sync.Mutex
	// skew is the sign-in service's clock minus ours at the last call, as
	// the SDK's client keeps it.
	skew atomic.Int64
}

// Retrieve returns the cached credentials while they are unexpired, else
// refreshes them with the sign-in service and rewrites the cache.
func (p *provider) Retrieve(ctx context.Context) (aws.Credentials, error) {
	p.mu.Lock()
	defer p.mu.Unlock()

	tok, err := p.load()
	if err != nil {
		return aws.Credentials{}, fmt.Errorf("load login token: %w", err)
	}
	if err := tok.validate(); err != nil {
		return aws.Credentials{}, fmt.Errorf("validate login token %s: %w", p.path, err)
	}
	if time.Now().Before(tok.AccessToken.ExpiresAt) {
		return tok.credentials(), nil
	}

	out, err := p.createToken(ctx, tok)
	if err != nil {
		return aws.Credentials{}, fmt.Errorf("create oauth2 token for login session cached at %s: %w", p.path, err)
	}
	if err := tok.update(out); err != nil {
		return aws.Credentials{}, fmt.Errorf("update token: the sign-in answer for the login session cached at %s: %w", p.path, err)
	}
	if err := p.save(tok); err != nil {
		return aws.Credentials{}, fmt.Errorf("save token: %w", err) // the *fs.PathError says the path
	}
	return tok.credentials(), nil
}

// cacheFile is the cache file as it is on disk. The fields and their order
// are the SDK's: a rewrite gives the same bytes (fields it does not know
// are dropped, as the SDK drops them).
type cacheFile struct {
	AccessToken   *cachedCredentials `json:"accessToken"`
	TokenType     string             `json:"tokenType"`
	RefreshToken  string             `json:"refreshToken"`
	IdentityToken string             `json:"identityToken"`
	ClientID      string             `json:"clientId"`
	DPoPKey       string             `json:"dpopKey"`
}

type cachedCredentials struct {
	AccessKeyID     string    `json:"accessKeyId"`
	SecretAccessKey string    `json:"secretAccessKey"`
	SessionToken    string    `json:"sessionToken"`
	AccountID       string    `json:"accountId"`
	ExpiresAt       time.Time `json:"expiresAt"`
}

func (p *provider) load() (*cacheFile, error) {
	b, err := os.ReadFile(p.path)
	if errors.Is(err, fs.ErrNotExist) {
		// The SDK's words, and the path; the cause adds nothing.
		return nil, fmt.Errorf("token file not found, please reauthenticate (aws login): %s", p.path)
	}
	if err != nil {
		return nil, err // *fs.PathError: says the path
	}
	var t *cacheFile
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("%s: %w", p.path, err)
	}
	if t == nil {
		// JSON null: the SDK dereferences it and panics.
		return nil, fmt.Errorf("%s: the file holds null", p.path)
	}
	return t, nil
}

// validate is the SDK's check of a loaded or refreshed token, in its order
// and with its words.
func (t *cacheFile) validate() error {
	if t.AccessToken == nil {
		return errors.New("missing accessToken")
	}
	for _, f := range []struct {
		missing bool
		name    string
	}{
		{t.AccessToken.AccessKeyID == "", "accessToken.accessKeyId"},
		{t.AccessToken.SecretAccessKey == "", "accessToken.secretAccessKey"},
		{t.AccessToken.SessionToken == "", "accessToken.sessionToken"},
		{t.AccessToken.AccountID == "", "accessToken.accountId"},
		{t.AccessToken.ExpiresAt.IsZero(), "accessToken.expiresAt"},
		{t.ClientID == "", "clientId"},
		{t.RefreshToken == "", "refreshToken"},
		{t.DPoPKey == "", "dpopKey"},
	} {
		if f.missing {
			return fmt.Errorf("missing %s", f.name)
		}
	}
	return nil
}

func (t *cacheFile) credentials() aws.Credentials {
	return aws.Credentials{
		AccessKeyID:     t.AccessToken.AccessKeyID,
		SecretAccessKey: t.AccessToken.SecretAccessKey,
		SessionToken:    t.AccessToken.SessionToken,
		Source:          ProviderName,
		CanExpire:       true,
		Expires:         t.AccessToken.ExpiresAt,
		AccountID:       t.AccessToken.AccountID,
	}
}

// update takes in the refreshed credentials and refresh token as the SDK
// does: the account, token type, identity token, client and key stay.
func (t *cacheFile) update(out *tokenOutput) error {
	if out.AccessToken == nil {
		return errors.New("missing AccessToken in CreateOAuth2Token response")
	}
	if out.ExpiresIn == nil {
		return errors.New("missing ExpiresIn in CreateOAuth2Token response")
	}
	t.AccessToken.AccessKeyID = out.AccessToken.AccessKeyID
	t.AccessToken.SecretAccessKey = out.AccessToken.SecretAccessKey
	t.AccessToken.SessionToken = out.AccessToken.SessionToken
	t.AccessToken.ExpiresAt = time.Now().Add(time.Duration(*out.ExpiresIn) * time.Second)
	t.RefreshToken = out.RefreshToken
	return t.validate()
}

// save replaces the cache file whole (wholefile.Replace: a new file
// beside it, synced, renamed over it, the directory synced), so that a
// reader meanwhile (another process, the AWS CLI) never sees it torn and
// a crash leaves the old refresh token and key or the new ones. The SDK
// rewrites the file in place instead (truncated, then written). The new
// file takes the old one's mode (less the umask, as any created file:
// never wider than the SDK's, which keeps it whole); a file that has
// gone is made 0600 with RestrictPermissions, else 0666 less the umask,
// as the SDK makes it.
func (p *provider) save(t *cacheFile) error {
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	mode := fs.FileMode(0o666)
	if p.opts.RestrictPermissions {
		mode = 0o600
	}
	switch info, err := os.Stat(p.path); {
	case err == nil:
		mode = info.Mode().Perm()
	case !errors.Is(err, fs.ErrNotExist):
		return err // *fs.PathError: says the path
	}
	return wholefile.Replace(p.path, b, wholefile.Created(mode))
}
