package awslogin

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
)

// tokenPath is CreateOAuth2Token's path, joined to the endpoint's.
const tokenPath = "/v1/token"

// maxAnswer bounds what is read of an answer; a token answer is ~2 KiB.
const maxAnswer = 1 << 20

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

// serviceError is the sign-in service's refusal: the HTTP status and the
// error code and message of its JSON answer. It never holds a token.
type serviceError struct {
	StatusCode int
	// Code is the error's type (X-Amzn-ErrorType, else __type, else code),
	// its namespace and URI stripped; UnknownError when there is none.
	Code string
	// OAuth2Code is the answer's "error" member, such as TOKEN_EXPIRED.
	OAuth2Code string
	Message    string
}

// Error says the status, the code and the message; for an
// AccessDeniedException whose OAuth2 code the SDK explains, the SDK's
// explanation first.
func (e *serviceError) Error() string {
	msg := fmt.Sprintf("sign-in service HTTP %d: %s", e.StatusCode, e.Code)
	if e.OAuth2Code != "" {
		msg += " (" + e.OAuth2Code + ")"
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if e.Code == "AccessDeniedException" {
		switch e.OAuth2Code {
		case "TOKEN_EXPIRED":
			return "login session has expired, please reauthenticate: " + msg
		case "USER_CREDENTIALS_CHANGED":
			return "login session password has changed, please reauthenticate: " + msg
		case "INSUFFICIENT_PERMISSIONS":
			return "insufficient permissions, you may be missing permissions for the CreateOAuth2Token action: " + msg
		}
	}
	return msg
}

// retryable is the SDK standard retryer's verdict on an answer: a 500,
// 502, 503 or 504 (whatever its body), or a throttling or timeout error
// code.
func retryable(status int, code string) bool {
	if _, ok := retry.DefaultRetryableHTTPStatusCodes[status]; ok {
		return true
	}
	if _, ok := retry.DefaultThrottleErrorCodes[code]; ok {
		return true
	}
	_, ok := retry.DefaultRetryableErrorCodes[code]
	return ok
}

// createToken refreshes tok with the sign-in service, retrying as the SDK's
// standard retryer does: a transport error, a retryable serviceError.
func (c Client) createToken(ctx context.Context, tok *cacheFile) (*tokenOutput, error) {
	if c.Endpoint == "" {
		return nil, errors.New("no sign-in endpoint (is the region set?)")
	}
	u, err := url.Parse(c.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("sign-in endpoint: %w", err)
	}
	u.Path = joinPath(u.Path, tokenPath)
	u.RawPath = ""
	key, err := dpopKey(tok.DPoPKey)
	if err != nil {
		return nil, fmt.Errorf("sign dpop: %w", err)
	}
	body, err := json.Marshal(tokenInput{ClientID: tok.ClientID, GrantType: "refresh_token", RefreshToken: tok.RefreshToken})
	if err != nil {
		return nil, err
	}
	attempts := c.MaxAttempts
	if attempts <= 0 {
		attempts = retry.DefaultMaxAttempts
	}
	for attempt := 1; ; attempt++ {
		out, again, err := c.try(ctx, u.String(), key, body)
		if !again || attempt >= attempts {
			if err != nil && attempt > 1 {
				err = fmt.Errorf("after %d attempts: %w", attempt, err)
			}
			return out, err
		}
		if err := sleep(ctx, c.backoff(attempt)); err != nil {
			return nil, fmt.Errorf("waiting to retry the refresh after attempt %d: %w", attempt, err)
		}
	}
}

// try is one attempt; again says whether its failure may be retried.
func (c Client) try(ctx context.Context, endpoint string, key *ecdsa.PrivateKey, body []byte) (out *tokenOutput, again bool, err error) {
	proof, err := dpopProof(key, endpoint, time.Now())
	if err != nil {
		return nil, false, fmt.Errorf("sign dpop: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("DPoP", proof)
	req.Header.Set("User-Agent", "myelin (aws credentials)")
	hc := c.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, fmt.Errorf("POST %s: %w", endpoint, ctx.Err())
		}
		return nil, true, err // a *url.Error: says the method and the URL
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, false, fmt.Errorf("read sign-in answer from %s: %w", endpoint, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		serr, err := decodeError(resp, answer)
		if err != nil {
			return nil, retryable(resp.StatusCode, ""), fmt.Errorf("sign-in answer HTTP %d from %s: %w", resp.StatusCode, endpoint, err)
		}
		return nil, retryable(serr.StatusCode, serr.Code), fmt.Errorf("POST %s: %w", endpoint, serr)
	}
	out = new(tokenOutput)
	if len(bytes.TrimSpace(answer)) > 0 {
		if err := json.Unmarshal(answer, out); err != nil {
			return nil, false, fmt.Errorf("decode sign-in answer from %s: %w", endpoint, err)
		}
	}
	return out, false, nil
}

// decodeError reads an error answer as the SDK's restJson1 protocol does.
func decodeError(resp *http.Response, answer []byte) (*serviceError, error) {
	var info struct {
		Type    string `json:"__type"`
		Code    any    `json:"code"`
		Message string `json:"message"`
		Error   string `json:"error"`
	}
	if len(bytes.TrimSpace(answer)) > 0 {
		if err := json.Unmarshal(answer, &info); err != nil {
			return nil, err
		}
	}
	code := resp.Header.Get("X-Amzn-ErrorType")
	if code == "" {
		code = info.Type
	}
	if s, ok := info.Code.(string); code == "" && ok {
		code = s
	}
	if code == "" {
		code = "UnknownError"
	}
	if i := strings.Index(code, ":"); i >= 0 {
		code = code[:i]
	}
	if i := strings.Index(code, "#"); i >= 0 {
		code = code[i+1:]
	}
	return &serviceError{StatusCode: resp.StatusCode, Code: code, OAuth2Code: info.Error, Message: info.Message}, nil
}

// joinPath joins an endpoint's path and an operation's as the SDK does:
// a leading slash, one slash between them.
func joinPath(base, op string) string {
	if !strings.HasPrefix(base, "/") {
		base = "/" + base
	}
	op = strings.TrimPrefix(op, "/")
	if op != "" && base != "/" && !strings.HasSuffix(base, "/") {
		base += "/"
	}
	return base + op
}

func (c Client) backoff(attempt int) time.Duration {
	if c.Backoff != nil {
		return c.Backoff(attempt)
	}
	d, _ := retry.NewExponentialJitterBackoff(retry.DefaultMaxBackoff).BackoffDelay(attempt, nil)
	return d
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
