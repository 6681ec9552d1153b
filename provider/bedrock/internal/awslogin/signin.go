package awslogin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/myelin-run/myelin/provider/bedrock/internal/awscall"
)

// tokenPath is CreateOAuth2Token's path, joined to the endpoint's.
const tokenPath = "/v1/token"

// tokenInput is CreateOAuth2Token's body for a refresh-token grant, the
// members the SDK sends in the order it sends them.
type tokenInput struct {
	ClientID     string `json:"clientId"`
	GrantType    string `json:"grantType"`
	RefreshToken string `json:"refreshToken"`
}

// tokenOutput is the part of CreateOAuth2Token's answer the refresh uses.
type tokenOutput struct {
	AccessToken *struct {
		AccessKeyID     string `json:"accessKeyId"`
		SecretAccessKey string `json:"secretAccessKey"`
		SessionToken    string `json:"sessionToken"`
	} `json:"accessToken"`
	ExpiresIn    *int32 `json:"expiresIn"`
	RefreshToken string `json:"refreshToken"`
}

// createToken refreshes tok with the sign-in service, each attempt
// carrying a fresh DPoP proof, retrying as the SDK's client does.
func (p *provider) createToken(ctx context.Context, tok *cacheFile) (*tokenOutput, error) {
	key, err := dpopKey(tok.DPoPKey)
	if err != nil {
		return nil, fmt.Errorf("sign dpop: %w", err)
	}
	body, err := json.Marshal(tokenInput{ClientID: tok.ClientID, GrantType: "refresh_token", RefreshToken: tok.RefreshToken})
	if err != nil {
		return nil, err
	}
	answer, err := p.client.Do(ctx, awscall.Call{
		Service: "sign-in", Operation: "CreateOAuth2Token", Path: tokenPath,
		Request: func(ctx context.Context, target string, _ time.Time) (*http.Request, error) {
			proof, err := dpopProof(key, target, time.Now())
			if err != nil {
				return nil, fmt.Errorf("sign dpop: %w", err)
			}
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
			if err != nil {
				return nil, err
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("DPoP", proof)
			return req, nil
		},
		Skew: &p.skew,
	})
	if err != nil {
		return nil, explain(err)
	}
	out := new(tokenOutput)
	if len(bytes.TrimSpace(answer)) > 0 {
		if err := json.Unmarshal(answer, out); err != nil {
			return nil, fmt.Errorf("decode sign-in answer: %w", err)
		}
	}
	return out, nil
}

// explain puts first, for an AccessDeniedException whose OAuth2 code the
// SDK explains, the SDK's explanation.
func explain(err error) error {
	var e *awscall.Error
	if !errors.As(err, &e) || e.ErrorCode() != "AccessDeniedException" {
		return err
	}
	switch e.OAuth2Error {
	case "TOKEN_EXPIRED":
		return fmt.Errorf("login session has expired, please reauthenticate: %w", err)
	case "USER_CREDENTIALS_CHANGED":
		return fmt.Errorf("login session password has changed, please reauthenticate: %w", err)
	case "INSUFFICIENT_PERMISSIONS":
		return fmt.Errorf("insufficient permissions, you may be missing permissions for the CreateOAuth2Token action: %w", err)
	}
	return err
}
