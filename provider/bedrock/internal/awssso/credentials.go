package awssso

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/myelin-run/myelin/provider/bedrock/internal/awscall"
)

// CredentialsOptions is what an SSO profile says of the role to assume.
type CredentialsOptions struct {
	// AccountID is sso_account_id, RoleName sso_role_name.
	AccountID, RoleName string
	// StartURL is sso_start_url; with neither CachedTokenFilepath nor
	// TokenProvider it names the cache file.
	StartURL string
	// CachedTokenFilepath, when set, is the legacy profile's cache file in
	// place of CachedTokenFilepath(StartURL). It is not read when
	// TokenProvider is set (the token provider has its own path).
	CachedTokenFilepath string
	// TokenProvider is set for an sso-session profile: the token comes
	// from it (refreshed when expired) instead of from the file directly.
	TokenProvider *TokenProvider
}

// sourceName is aws.Credentials.Source of SSO credentials, the SDK's.
const sourceName = "SSOProvider"

// credentialsProvider exchanges the SSO token for role credentials.
type credentialsProvider struct {
	sso  Client
	o    CredentialsOptions
	skew atomic.Int64 // SSO's clock minus ours at the last call, as the SDK's client keeps it
}

// NewCredentials is the credentials of an SSO profile, as the SDK's
// ssocreds.Provider: each Retrieve takes the token (from o.TokenProvider,
// or for a legacy profile from the cache file, an expired one an error,
// never refreshed) and calls GetRoleCredentials on sso, the SSO client of
// the profile's sso_region. It does not cache; the chain wraps it in
// aws.CredentialsCache.
func NewCredentials(sso Client, o CredentialsOptions) aws.CredentialsProvider {
	return &credentialsProvider{sso: sso, o: o}
}

// invalidTokenError is the SDK's InvalidTokenError: the legacy profile's
// token is missing, unreadable or expired; `aws sso login` renews it.
type invalidTokenError struct{ err error }

func (e *invalidTokenError) Error() string {
	const msg = "the SSO session has expired or is invalid"
	if e.err == nil {
		return msg
	}
	return msg + ": " + e.err.Error()
}

func (e *invalidTokenError) Unwrap() error { return e.err }

// Retrieve returns the role's credentials, expiring when the service says.
func (p *credentialsProvider) Retrieve(ctx context.Context) (aws.Credentials, error) {
	token, err := p.token(ctx)
	if err != nil {
		return aws.Credentials{}, err
	}
	body, err := p.sso.Do(ctx, awscall.Call{
		Service: "sso", Operation: "GetRoleCredentials",
		Path:  "/federation/credentials",
		Query: url.Values{"role_name": {p.o.RoleName}, "account_id": {p.o.AccountID}},
		Request: func(ctx context.Context, target string, _ time.Time) (*http.Request, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
			if err != nil {
				return nil, err
			}
			req.Header.Set("X-Amz-Sso_bearer_token", token)
			return req, nil
		},
		Skew: &p.skew,
	})
	if err != nil {
		return aws.Credentials{}, fmt.Errorf("sso credentials for role %q in account %s: %w", p.o.RoleName, p.o.AccountID, err)
	}
	var out struct {
		RoleCredentials *struct {
			AccessKeyID     string `json:"accessKeyId"`
			SecretAccessKey string `json:"secretAccessKey"`
			SessionToken    string `json:"sessionToken"`
			Expiration      int64  `json:"expiration"`
		} `json:"roleCredentials"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return aws.Credentials{}, fmt.Errorf("sso GetRoleCredentials: decode answer: %w", err)
	}
	rc := out.RoleCredentials
	if rc == nil {
		return aws.Credentials{}, errors.New("sso GetRoleCredentials: answer has no roleCredentials")
	}
	return aws.Credentials{
		AccessKeyID:     rc.AccessKeyID,
		SecretAccessKey: rc.SecretAccessKey,
		SessionToken:    rc.SessionToken,
		CanExpire:       true,
		Expires:         time.UnixMilli(rc.Expiration).UTC(),
		Source:          sourceName,
		AccountID:       p.o.AccountID,
	}, nil
}

// token is the access token to present: the token provider's for an
// sso-session, else the unexpired one of the legacy cache file.
func (p *credentialsProvider) token(ctx context.Context) (string, error) {
	if p.o.TokenProvider != nil {
		t, err := p.o.TokenProvider.RetrieveBearerToken(ctx)
		if err != nil {
			return "", err
		}
		return t.Value, nil
	}
	path := p.o.CachedTokenFilepath
	if path == "" {
		var err error
		if path, err = CachedTokenFilepath(p.o.StartURL); err != nil {
			return "", &invalidTokenError{err: err}
		}
	}
	t, err := loadCachedToken(path)
	if err != nil {
		return "", &invalidTokenError{err: err}
	}
	if time.Now().After(t.expiresAt) {
		return "", &invalidTokenError{err: fmt.Errorf("cached SSO token in %s expired at %s: run aws sso login", path, t.expiresAt.UTC().Format(time.RFC3339))}
	}
	return t.accessToken, nil
}
