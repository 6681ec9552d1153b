package oauth

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// The grant and assertion types of RFC 7523.
const (
	grantJWTBearer    = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	assertionJWTType  = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
	methodPrivateKey  = "private_key_jwt"
	methodSecretBasic = "client_secret_basic"
	methodSecretPost  = "client_secret_post"
)

// clientCredentials gets a token with the client's own credentials (RFC
// 6749 §4.4, SEP-1046): its secret, or an assertion signed with its
// private key (RFC 7523 §2.2). The SDK's extauth handler takes a secret
// only, and chooses the method itself; this takes either, and the
// config's method.
func (h *Handler) clientCredentials(ctx context.Context, req *http.Request, resp *http.Response) (oauth2.TokenSource, error) {
	cfg := h.o.Config
	d, err := discover(ctx, h.client, req.URL.String(), resp)
	if err != nil {
		return nil, fmt.Errorf("MCP server %q: %w", h.o.Server, err)
	}
	method := cfg.AuthMethod
	if method == "" && cfg.PrivateKey != "" {
		method = methodPrivateKey
	}
	if method == "" {
		method = pickMethod(d.asm.TokenEndpointAuthMethodsSupported)
	}
	scopes := cfg.Scopes
	if len(scopes) == 0 {
		scopes = d.scopes
	}
	cc := &clientcredentials.Config{
		ClientID:       cfg.ClientID,
		ClientSecret:   cfg.ClientSecret,
		TokenURL:       d.asm.TokenEndpoint,
		Scopes:         scopes,
		EndpointParams: url.Values{"resource": {d.resource}},
		AuthStyle:      authStyle(method),
	}
	bg := context.WithValue(context.Background(), oauth2.HTTPClient, h.client)
	var src oauth2.TokenSource
	if method == methodPrivateKey {
		key, err := parseKey(cfg.PrivateKey, cfg.SigningAlg)
		if err != nil {
			return nil, fmt.Errorf("MCP server %q: oauth.privateKey: %w", h.o.Server, err)
		}
		src = &assertionSource{ctx: bg, cc: cc, key: key, audience: d.asm.Issuer}
	} else {
		src = cc.TokenSource(bg)
	}
	ts := oauth2.ReuseTokenSource(nil, src)
	if _, err := ts.Token(); err != nil {
		return nil, fmt.Errorf("MCP server %q: the client credentials grant at %s: %w", h.o.Server, d.asm.TokenEndpoint, err)
	}
	return ts, nil
}

// assertionSource asks for a token with a fresh signed assertion each
// time: an assertion is good for minutes, a source for the whole run.
type assertionSource struct {
	ctx      context.Context
	cc       *clientcredentials.Config
	key      *signingKey
	audience string
}

func (a *assertionSource) Token() (*oauth2.Token, error) {
	jwt, err := a.key.assertion(a.cc.ClientID, a.audience)
	if err != nil {
		return nil, err
	}
	cc := *a.cc
	cc.ClientSecret = ""
	cc.AuthStyle = oauth2.AuthStyleInParams
	cc.EndpointParams = url.Values{}
	for k, v := range a.cc.EndpointParams {
		cc.EndpointParams[k] = v
	}
	cc.EndpointParams.Set("client_assertion_type", assertionJWTType)
	cc.EndpointParams.Set("client_assertion", jwt)
	return cc.Token(a.ctx)
}

// crossApp is enterprise-managed authorisation (SEP-990): the user's ID
// token from the enterprise IdP is exchanged there for an identity
// assertion grant (RFC 8693, the SDK's oauthex.ExchangeToken), which the
// MCP server's authorisation server takes for a token (RFC 7523). The
// SDK's extauth handler sends the client's secret in the body; this
// authenticates as the authorisation server's metadata asks.
func (h *Handler) crossApp(ctx context.Context, req *http.Request, resp *http.Response) (oauth2.TokenSource, error) {
	cfg := h.o.Config
	d, err := discover(ctx, h.client, req.URL.String(), resp)
	if err != nil {
		return nil, fmt.Errorf("MCP server %q: %w", h.o.Server, err)
	}
	idpToken, err := idpTokenEndpoint(ctx, h.client, cfg.IdP.Issuer)
	if err != nil {
		return nil, fmt.Errorf("MCP server %q: the identity provider %s: %w", h.o.Server, cfg.IdP.Issuer, err)
	}
	idpClient := &oauthex.ClientCredentials{ClientID: cfg.IdP.ClientID}
	if cfg.IdP.ClientSecret != "" {
		idpClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: cfg.IdP.ClientSecret}
	}
	scopes := cfg.Scopes
	if len(scopes) == 0 {
		scopes = d.scopes
	}
	grant, err := oauthex.ExchangeToken(ctx, idpToken, &oauthex.TokenExchangeRequest{
		RequestedTokenType: oauthex.TokenTypeIDJAG,
		Audience:           d.asm.Issuer,
		Resource:           d.resource,
		Scope:              scopes,
		SubjectToken:       cfg.IdP.IDToken,
		SubjectTokenType:   oauthex.TokenTypeIDToken,
	}, idpClient, h.client)
	if err != nil {
		return nil, fmt.Errorf("MCP server %q: exchanging the ID token at %s: %w", h.o.Server, idpToken, err)
	}
	method := cfg.AuthMethod
	if method == "" {
		method = pickMethod(d.asm.TokenEndpointAuthMethodsSupported)
	}
	c := &oauth2.Config{
		ClientID:     cfg.ClientID,
		ClientSecret: cfg.ClientSecret,
		Endpoint:     oauth2.Endpoint{TokenURL: d.asm.TokenEndpoint, AuthStyle: authStyle(method)},
	}
	opts := []oauth2.AuthCodeOption{
		oauth2.SetAuthURLParam("grant_type", grantJWTBearer),
		oauth2.SetAuthURLParam("assertion", grant.AccessToken), // the ID-JAG, despite the field's name
	}
	if len(scopes) > 0 {
		opts = append(opts, oauth2.SetAuthURLParam("scope", strings.Join(scopes, " ")))
	}
	tok, err := c.Exchange(context.WithValue(ctx, oauth2.HTTPClient, h.client), "", opts...)
	if err != nil {
		return nil, fmt.Errorf("MCP server %q: the JWT bearer grant at %s: %w", h.o.Server, d.asm.TokenEndpoint, err)
	}
	return oauth2.StaticTokenSource(tok), nil
}

// idpTokenEndpoint finds the token endpoint of an identity provider by
// its OpenID (or RFC 8414) metadata. The SDK's reader is not used: it
// refuses a server without PKCE, which a token exchange does not need.
func idpTokenEndpoint(ctx context.Context, c *http.Client, issuer string) (string, error) {
	base := strings.TrimSuffix(issuer, "/")
	for _, u := range []string{base + "/.well-known/openid-configuration", base + "/.well-known/oauth-authorization-server"} {
		var meta struct {
			Issuer        string `json:"issuer"`
			TokenEndpoint string `json:"token_endpoint"`
		}
		found, err := getJSON(ctx, c, u, &meta)
		if err != nil {
			return "", err
		}
		if !found {
			continue
		}
		if strings.TrimSuffix(meta.Issuer, "/") != base {
			return "", fmt.Errorf("its metadata at %s names issuer %q", u, meta.Issuer)
		}
		if meta.TokenEndpoint == "" {
			return "", fmt.Errorf("its metadata at %s names no token endpoint", u)
		}
		return meta.TokenEndpoint, nil
	}
	return "", errors.New("it has no metadata (.well-known/openid-configuration)")
}

// legacySignIn is the authorisation code flow with PKCE against a
// 2025-03-26 server: its metadata (or default endpoints) at its root,
// the client pre-registered or registered there.
func (h *Handler) legacySignIn(ctx context.Context, d *discovery) error {
	cfg := h.o.Config
	c := &oauth2.Config{
		ClientID:     cfg.ClientID,
		ClientSecret: cfg.ClientSecret,
		Endpoint: oauth2.Endpoint{
			AuthURL: d.asm.AuthorizationEndpoint, TokenURL: d.asm.TokenEndpoint,
			AuthStyle: authStyle(pickMethod(d.asm.TokenEndpointAuthMethodsSupported)),
		},
		RedirectURL: h.loop.RedirectURL(),
		Scopes:      h.scopes(d.scopes),
	}
	if c.ClientID == "" {
		if d.asm.RegistrationEndpoint == "" {
			return fmt.Errorf("MCP server %q: its authorization server offers no registration; give oauth.clientId", h.o.Server)
		}
		reg, err := oauthex.RegisterClient(ctx, d.asm.RegistrationEndpoint, registration(c.RedirectURL), h.client)
		if err != nil {
			return fmt.Errorf("MCP server %q: registering at %s: %w", h.o.Server, d.asm.RegistrationEndpoint, err)
		}
		c.ClientID, c.ClientSecret = reg.ClientID, reg.ClientSecret
		if reg.TokenEndpointAuthMethod != "" {
			c.Endpoint.AuthStyle = authStyle(reg.TokenEndpointAuthMethod)
		}
	}
	verifier, state := oauth2.GenerateVerifier(), rand.Text()
	resource := oauth2.SetAuthURLParam("resource", d.resource)
	res, err := h.loop.Fetch(ctx, &auth.AuthorizationArgs{URL: c.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), resource)})
	if err != nil {
		return fmt.Errorf("MCP server %q: signing in: %w", h.o.Server, err)
	}
	if res.State != state {
		return fmt.Errorf("MCP server %q: signing in: the redirect's state is not the one sent", h.o.Server)
	}
	tok, err := c.Exchange(context.WithValue(ctx, oauth2.HTTPClient, h.client), res.Code, oauth2.VerifierOption(verifier), resource)
	if err != nil {
		return fmt.Errorf("MCP server %q: the token request at %s: %w", h.o.Server, c.Endpoint.TokenURL, err)
	}
	ts := h.keeping(c, tok)
	h.mu.Lock()
	h.ts = ts
	h.mu.Unlock()
	return nil
}

// pickMethod is the token endpoint authentication a server's metadata
// allows, basic first (RFC 6749's default, and every server's duty).
func pickMethod(supported []string) string {
	for _, m := range []string{methodSecretBasic, methodSecretPost} {
		if slices.Contains(supported, m) {
			return m
		}
	}
	return methodSecretBasic
}

func authStyle(method string) oauth2.AuthStyle {
	if method == methodSecretBasic {
		return oauth2.AuthStyleInHeader
	}
	return oauth2.AuthStyleInParams // post, none (no secret sent), private_key_jwt
}

func splitScopes(s string) []string { return strings.Fields(s) }
