package awssso

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/smithy-go/auth/bearer"

	"github.com/myelin-run/myelin/provider/bedrock/internal/awscall"
)

// TokenProvider is the SSO access token of an sso-session profile: the
// token `aws sso login` cached, refreshed with SSO-OIDC CreateToken once
// it has expired (the SDK's SSOTokenProvider: no earlier window; the
// chain's bearer.TokenCache asks 5 minutes ahead, as the SDK's config
// does), the cache file then rewritten. It is safe for concurrent use.
// It must not be used for a legacy profile, whose token is never refreshed.
type TokenProvider struct {
	oidc Client
	path string
	mu   sync.Mutex   // one refresh at a time in this process
	skew atomic.Int64 // SSO-OIDC's clock minus ours at the last call, as the SDK's client keeps it
}

var _ bearer.TokenProvider = (*TokenProvider)(nil)

// NewTokenProvider is the token provider of the cache file at cachePath
// (CachedTokenFilepath of the session's name), refreshing through oidc,
// the SSO-OIDC client of the session's sso_region.
func NewTokenProvider(oidc Client, cachePath string) *TokenProvider {
	return &TokenProvider{oidc: oidc, path: cachePath}
}

// RetrieveBearerToken returns the cached token, or, when it has expired,
// the one SSO-OIDC gives for its refresh token, after rewriting the cache
// file. A missing or unreadable file, or an expired token without
// clientId, clientSecret and refreshToken, is an error: the user must run
// `aws sso login`.
func (p *TokenProvider) RetrieveBearerToken(ctx context.Context) (bearer.Token, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, err := loadCachedToken(p.path)
	if err != nil {
		return bearer.Token{}, err
	}
	if time.Now().After(t.expiresAt) {
		if t, err = p.refresh(ctx, t); err != nil {
			return bearer.Token{}, fmt.Errorf("refresh cached SSO token %s: %w", p.path, err)
		}
	}
	return bearer.Token{Value: t.accessToken, CanExpire: !t.expiresAt.IsZero(), Expires: t.expiresAt}, nil
}

// createTokenRequest is the body of SSO-OIDC CreateToken for a refresh.
type createTokenRequest struct {
	ClientID     string `json:"clientId"`
	ClientSecret string `json:"clientSecret"`
	GrantType    string `json:"grantType"`
	RefreshToken string `json:"refreshToken"`
}

// createTokenResponse is the part of CreateToken's answer kept.
type createTokenResponse struct {
	AccessToken  string `json:"accessToken"`
	ExpiresIn    int32  `json:"expiresIn"`
	RefreshToken string `json:"refreshToken"`
}

// refresh exchanges t's refresh token for a new token and rewrites the
// cache file as the SDK does: accessToken, expiresAt (now + expiresIn)
// and refreshToken replaced (an answer without a refresh token drops it),
// every other member kept, the file's mode kept.
func (p *TokenProvider) refresh(ctx context.Context, t cachedToken) (cachedToken, error) {
	if t.clientID == "" || t.clientSecret == "" || t.refreshToken == "" {
		return cachedToken{}, errors.New("cached SSO token has expired and cannot be refreshed (no clientId, clientSecret or refreshToken): run aws sso login")
	}
	body, err := json.Marshal(createTokenRequest{ClientID: t.clientID, ClientSecret: t.clientSecret,
		GrantType: "refresh_token", RefreshToken: t.refreshToken})
	if err != nil {
		return cachedToken{}, fmt.Errorf("encode CreateToken request: %w", err)
	}
	answer, err := p.oidc.Do(ctx, awscall.Call{
		Service: "sso-oidc", Operation: "CreateToken", Path: "/token",
		Request: func(ctx context.Context, target string, _ time.Time) (*http.Request, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
			if err != nil {
				return nil, err
			}
			req.Header.Set("Content-Type", "application/json")
			return req, nil
		},
		Skew: &p.skew,
	})
	if err != nil {
		return cachedToken{}, err
	}
	var out createTokenResponse
	if err := json.Unmarshal(answer, &out); err != nil {
		return cachedToken{}, fmt.Errorf("sso-oidc CreateToken: decode answer: %w", err)
	}
	t.accessToken = out.AccessToken
	t.expiresAt = time.Now().Add(time.Duration(out.ExpiresIn) * time.Second)
	t.refreshToken = out.RefreshToken
	info, err := os.Stat(p.path)
	if err != nil {
		return cachedToken{}, fmt.Errorf("stat cached SSO token file: %w", err)
	}
	if err := storeCachedToken(p.path, t, info.Mode()); err != nil {
		return cachedToken{}, fmt.Errorf("unable to cache refreshed SSO token: %w", err)
	}
	return t, nil
}
