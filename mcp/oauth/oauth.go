// Package oauth owns myelin's side of MCP authorisation (OAuth 2.1 for
// streamable HTTP servers): what a server's entry says about it (Config),
// the handler the go-sdk's transport calls when a server answers 401 or
// 403 (Handler), the loopback listener that receives the browser's
// redirect (Loopback), and the tokens kept between runs (Store).
//
// It builds on the go-sdk's auth support where the SDK has it: protected
// resource metadata and authorisation server discovery, client ID metadata
// documents, dynamic registration, PKCE and scope step-up are
// auth.AuthorizationCodeHandler's; client credentials with a secret are
// extauth's. It adds what the SDK lacks: tokens kept and refreshed across
// runs, client credentials signed with a private key (RFC 7523), the
// cross-app access grant authenticated as the authorisation server asks,
// and the 2025-03-26 flows whose metadata names another issuer.
//
// It must not print or log a token, a refresh token, a client secret or a
// private key, nor put one in an error; and it must not start a browser
// itself: the caller says how a person is reached (Interaction).
package oauth

import (
	"fmt"
	"strings"
)

// Grants a Config may name.
const (
	GrantAuthorizationCode = "authorization_code" // a person signs in, in a browser (the default)
	GrantClientCredentials = "client_credentials" // a service signs in with its own credentials
	GrantCrossApp          = "cross_app"          // an enterprise identity provider's ID token is exchanged (SEP-990)
)

// Config is the "oauth" object of an HTTP server's entry in mcpServers.
// Every field is optional: with none, a server that asks for authorisation
// gets the authorisation code flow with dynamic client registration. Its
// strings have had ${VAR} expanded, so secrets come from the environment.
type Config struct {
	// Grant is how tokens are obtained: "authorization_code" (default),
	// "client_credentials" or "cross_app".
	Grant string `json:"grant,omitempty"`
	// ClientID and ClientSecret are a client registered with the
	// authorisation server beforehand; without them the client registers
	// itself (or uses ClientMetadataURL).
	ClientID     string `json:"clientId,omitempty"`
	ClientSecret string `json:"clientSecret,omitempty"`
	// ClientMetadataURL is an https URL of a client ID metadata document
	// that names myelin's redirect; used as the client id where the
	// authorisation server supports it.
	ClientMetadataURL string `json:"clientMetadataUrl,omitempty"`
	// PrivateKey is a PEM private key (PKCS #8, or SEC 1 / PKCS #1) that
	// signs the client's assertion (private_key_jwt) for client
	// credentials; SigningAlg is its algorithm, ES256 or RS256, inferred
	// from the key when empty.
	PrivateKey string `json:"privateKey,omitempty"`
	SigningAlg string `json:"signingAlg,omitempty"`
	// AuthMethod is how client credentials authenticate at the token
	// endpoint: client_secret_basic, client_secret_post or
	// private_key_jwt; chosen from the server's metadata when empty. The
	// authorisation code flow takes it from the registration or metadata.
	AuthMethod string `json:"authMethod,omitempty"`
	// Scopes, when set, are requested in place of those the server
	// advertises.
	Scopes []string `json:"scopes,omitempty"`
	// RedirectPort is the loopback port of the redirect, for a client
	// registered with a fixed redirect URI; any free port when 0.
	RedirectPort int `json:"redirectPort,omitempty"`
	// IdP is the enterprise identity provider of the cross_app grant.
	IdP *IdP `json:"idp,omitempty"`
}

// IdP is the enterprise identity provider whose ID token the cross-app
// grant exchanges for an assertion the MCP server's authorisation server
// accepts.
type IdP struct {
	Issuer       string `json:"issuer"`
	ClientID     string `json:"clientId"`
	ClientSecret string `json:"clientSecret,omitempty"`
	// IDToken is the user's ID token from the IdP (myelin does not run
	// the IdP's own sign-in: give it through a ${VAR}).
	IDToken string `json:"idToken"`
}

// Strings are the config's string fields by name, for ${VAR} expansion:
// the caller replaces each in place.
func (c *Config) Strings() map[string]*string {
	m := map[string]*string{
		"grant": &c.Grant, "clientId": &c.ClientID, "clientSecret": &c.ClientSecret,
		"clientMetadataUrl": &c.ClientMetadataURL, "privateKey": &c.PrivateKey,
		"signingAlg": &c.SigningAlg, "authMethod": &c.AuthMethod,
	}
	for i := range c.Scopes {
		m[fmt.Sprintf("scopes[%d]", i)] = &c.Scopes[i]
	}
	if c.IdP != nil {
		m["idp.issuer"], m["idp.clientId"] = &c.IdP.Issuer, &c.IdP.ClientID
		m["idp.clientSecret"], m["idp.idToken"] = &c.IdP.ClientSecret, &c.IdP.IDToken
	}
	return m
}

// Check says what is wrong with the config, naming the field; nil when
// nothing is.
func (c *Config) Check() error {
	switch c.Grant {
	case "", GrantAuthorizationCode:
	case GrantClientCredentials:
		if c.ClientID == "" {
			return fmt.Errorf(`oauth.grant %q needs oauth.clientId`, c.Grant)
		}
		if c.ClientSecret == "" && c.PrivateKey == "" {
			return fmt.Errorf(`oauth.grant %q needs oauth.clientSecret or oauth.privateKey`, c.Grant)
		}
	case GrantCrossApp:
		if c.ClientID == "" || c.IdP == nil || c.IdP.Issuer == "" || c.IdP.ClientID == "" || c.IdP.IDToken == "" {
			return fmt.Errorf(`oauth.grant %q needs oauth.clientId and oauth.idp with issuer, clientId and idToken`, c.Grant)
		}
	default:
		return fmt.Errorf("oauth.grant %q is not one myelin runs (%s, %s, %s)", c.Grant, GrantAuthorizationCode, GrantClientCredentials, GrantCrossApp)
	}
	switch c.AuthMethod {
	case "", "client_secret_basic", "client_secret_post", "private_key_jwt", "none":
	default:
		return fmt.Errorf("oauth.authMethod %q is not one myelin speaks (client_secret_basic, client_secret_post, private_key_jwt, none)", c.AuthMethod)
	}
	switch strings.ToUpper(c.SigningAlg) {
	case "", "ES256", "RS256":
	default:
		return fmt.Errorf("oauth.signingAlg %q is not one myelin signs with (ES256, RS256)", c.SigningAlg)
	}
	if c.RedirectPort < 0 || c.RedirectPort > 65535 {
		return fmt.Errorf("oauth.redirectPort %d is not a port", c.RedirectPort)
	}
	return nil
}
