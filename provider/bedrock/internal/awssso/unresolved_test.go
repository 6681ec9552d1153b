package awssso

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials/ssocreds"
	"github.com/aws/aws-sdk-go-v2/service/sso"
	"github.com/aws/aws-sdk-go-v2/service/ssooidc"
)

// unresolvable is an endpoint the SDK's clients cannot resolve (no URL),
// which they find out only when they send.
const unresolvable = "http://a b"

// errUnresolved is the chain's resolution error handed to our clients.
var errUnresolved = errors.New("resolving the endpoint: not a URL")

// TestAnUnresolvedEndpointFailsOnlyTheCallsThatNeedIt: with an SSO-OIDC
// or SSO client whose endpoint could not be resolved (Client.Err), an
// unexpired cached token still gives credentials, as with the SDK, whose
// clients resolve an endpoint only when they send (review rev-aws3
// finding 2); a refresh, or GetRoleCredentials, fails with the
// resolution error and sends nothing; a legacy profile's expired token
// is still the invalid-session error, the token being read first.
func TestAnUnresolvedEndpointFailsOnlyTheCallsThatNeedIt(t *testing.T) {
	for _, c := range []struct {
		name                 string
		session              bool
		file                 string
		oidcFails, ssoFails  bool
		wantErr, wantInvalid bool
		wantSSOSent          int
	}{
		{name: "a session's unexpired token, OIDC unresolved", session: true, file: "valid.json", oidcFails: true, wantSSOSent: 1},
		{name: "a session's expired token, OIDC unresolved", session: true, file: "expired.json", oidcFails: true, wantErr: true},
		{name: "a session's unexpired token, SSO unresolved", session: true, file: "valid.json", ssoFails: true, wantErr: true},
		{name: "a legacy unexpired token, SSO unresolved", file: "valid_legacy.json", ssoFails: true, wantErr: true},
		{name: "a legacy expired token, SSO unresolved", file: "expired.json", ssoFails: true, wantErr: true, wantInvalid: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			key := startURL
			if c.session {
				key = sessionName
			}
			for _, sdk := range []bool{true, false} {
				path := homeWithToken(t, key, fixture(t, c.file), 0o600)
				fs, fo := newFake(t, roleCredentialsOK), newFake(t, createTokenOK)
				var p aws.CredentialsProvider
				if sdk {
					ssoClient, oidcClient := sdkSSO(fs), sdkOIDC(fo)
					if c.ssoFails {
						ssoClient = sso.New(sso.Options{Region: "us-west-2", BaseEndpoint: aws.String(unresolvable), Retryer: sdkRetryer()})
					}
					if c.oidcFails {
						oidcClient = ssooidc.New(ssooidc.Options{Region: "us-west-2", BaseEndpoint: aws.String(unresolvable), Retryer: sdkRetryer()})
					}
					p = ssocreds.New(ssoClient, accountID, roleName, startURL, func(o *ssocreds.Options) {
						if c.session {
							o.SSOTokenProvider = ssocreds.NewSSOTokenProvider(oidcClient, path)
						}
					})
				} else {
					ssoClient, oidcClient := ourClient(fs), ourClient(fo)
					if c.ssoFails {
						ssoClient = Client{Err: errUnresolved}
					}
					if c.oidcFails {
						oidcClient = Client{Err: errUnresolved}
					}
					o := CredentialsOptions{AccountID: accountID, RoleName: roleName, StartURL: startURL}
					if c.session {
						o.TokenProvider = NewTokenProvider(oidcClient, path)
					}
					p = NewCredentials(ssoClient, o)
				}
				creds, err := p.Retrieve(context.Background())
				side := map[bool]string{true: "SDK", false: "ours"}[sdk]
				if (err != nil) != c.wantErr {
					t.Fatalf("%s: credentials %v, error %v; want error %v", side, creds.AccessKeyID, err, c.wantErr)
				}
				if !c.wantErr && creds.AccessKeyID != "AKIDSSO" {
					t.Errorf("%s: credentials %q", side, creds.AccessKeyID)
				}
				if n := len(fs.requests()); n != c.wantSSOSent {
					t.Errorf("%s: %d GetRoleCredentials sent, want %d", side, n, c.wantSSOSent)
				}
				if n := len(fo.requests()); n != 0 {
					t.Errorf("%s: %d CreateToken sent", side, n)
				}
				var sdkInvalid *ssocreds.InvalidTokenError
				var ourInvalid *invalidTokenError
				if invalid := errors.As(err, &sdkInvalid) || errors.As(err, &ourInvalid); invalid != c.wantInvalid {
					t.Errorf("%s: %v: an invalid-session error %v, want %v", side, err, invalid, c.wantInvalid)
				}
				if !sdk && c.wantErr && !c.wantInvalid && !errors.Is(err, errUnresolved) {
					t.Errorf("ours: %v, want the resolution error wrapped", err)
				}
			}
		})
	}
}

// TestAnUnresolvedOIDCEndpointFailsOnlyATokenRefresh: the bearer token
// provider (the chain's BearerAuthTokenProvider) with an SSO-OIDC client
// whose endpoint could not be resolved gives an unexpired cached token,
// as the SDK's does, and fails a refresh with the resolution error.
func TestAnUnresolvedOIDCEndpointFailsOnlyATokenRefresh(t *testing.T) {
	for _, c := range []struct {
		file    string
		wantErr bool
	}{{"valid.json", false}, {"expired.json", true}} {
		for _, sdk := range []bool{true, false} {
			path := homeWithToken(t, sessionName, fixture(t, c.file), 0o600)
			var err error
			var token string
			if sdk {
				oidc := ssooidc.New(ssooidc.Options{Region: "us-west-2", BaseEndpoint: aws.String(unresolvable), Retryer: sdkRetryer()})
				tok, e := ssocreds.NewSSOTokenProvider(oidc, path).RetrieveBearerToken(context.Background())
				token, err = tok.Value, e
			} else {
				tok, e := NewTokenProvider(Client{Err: errUnresolved}, path).RetrieveBearerToken(context.Background())
				token, err = tok.Value, e
				if c.wantErr && !errors.Is(err, errUnresolved) {
					t.Errorf("ours, %s: %v, want the resolution error wrapped", c.file, err)
				}
			}
			if (err != nil) != c.wantErr || (err == nil && token == "") {
				t.Errorf("sdk=%v, %s: token %q, error %v; want error %v", sdk, c.file, token, err, c.wantErr)
			}
		}
	}
}
