package oauth

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// discovery is what a 401 or 403 led to: the protected resource's
// metadata (nil for a 2025-03-26 server, which has none), its
// authorisation server's, and the scopes to ask for.
type discovery struct {
	prm      *oauthex.ProtectedResourceMetadata
	resource string // what tokens are requested for (RFC 8707)
	asm      *oauthex.AuthServerMeta
	scopes   []string
	// legacy is set when the server follows 2025-03-26: no resource
	// metadata, and authorisation server metadata at the server's root
	// whose issuer is not the root (which RFC 8414 would refuse).
	legacy bool
}

// discover finds the authorisation server of the MCP server at serverURL
// from its refusal resp, as the MCP specification orders it: the
// WWW-Authenticate header's resource_metadata, then the metadata at the
// endpoint's path, then at the root; without any, the 2025-03-26 rules
// (the server's root is the authorisation server, with default endpoints
// when it has no metadata). Resource metadata that names another resource
// is refused: tokens for it must not be asked for.
func discover(ctx context.Context, c *http.Client, serverURL string, resp *http.Response) (*discovery, error) {
	challenges, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return nil, fmt.Errorf("the server's WWW-Authenticate header: %w", err)
	}
	d := &discovery{resource: serverURL}
	for _, cand := range metadataURLs(challengeParam(challenges, "resource_metadata"), serverURL) {
		prm, err := fetchPRM(ctx, c, cand.url, cand.resource)
		if err != nil {
			return nil, err
		}
		if prm != nil {
			d.prm, d.resource = prm, prm.Resource
			break
		}
	}
	issuer := ""
	if d.prm != nil {
		if len(d.prm.AuthorizationServers) == 0 {
			return nil, fmt.Errorf("the protected resource metadata of %s names no authorization server", serverURL)
		}
		issuer = d.prm.AuthorizationServers[0]
	} else {
		u, err := url.Parse(serverURL)
		if err != nil {
			return nil, fmt.Errorf("the server URL %q: %w", serverURL, err)
		}
		u.Path, u.RawQuery, u.Fragment = "", "", ""
		issuer = u.String()
	}
	d.asm, err = auth.GetAuthServerMetadata(ctx, issuer, c)
	if err != nil && d.prm == nil {
		// 2025-03-26: the metadata at the root is the server's own, and
		// nothing said its issuer had to be the root.
		d.asm, err = legacyMetadata(ctx, c, issuer)
		d.legacy = d.asm != nil
	}
	if err != nil {
		return nil, fmt.Errorf("the authorization server metadata of %s: %w", issuer, err)
	}
	if d.asm == nil {
		d.asm = &oauthex.AuthServerMeta{
			Issuer:                issuer,
			AuthorizationEndpoint: issuer + "/authorize",
			TokenEndpoint:         issuer + "/token",
			RegistrationEndpoint:  issuer + "/register",
		}
		d.legacy = d.prm == nil
	}
	if s := challengeParam(challenges, "scope"); s != "" {
		d.scopes = strings.Fields(s)
	} else if d.prm != nil {
		d.scopes = d.prm.ScopesSupported
	}
	return d, nil
}

type metadataURL struct{ url, resource string }

// metadataURLs are where a server's protected resource metadata is looked
// for, in order, each with the resource it must name.
func metadataURLs(fromHeader, serverURL string) []metadataURL {
	var out []metadataURL
	if fromHeader != "" {
		out = append(out, metadataURL{fromHeader, serverURL})
	}
	u, err := url.Parse(serverURL)
	if err != nil {
		return out
	}
	m := *u
	m.RawQuery, m.Fragment = "", ""
	if p := strings.Trim(u.Path, "/"); p != "" {
		m.Path = "/.well-known/oauth-protected-resource/" + p
		out = append(out, metadataURL{m.String(), serverURL})
	}
	m.Path = "/.well-known/oauth-protected-resource"
	root := *u
	root.Path, root.RawQuery, root.Fragment = "", "", ""
	return append(out, metadataURL{m.String(), root.String()})
}

// fetchPRM reads the protected resource metadata at metadataURL: nil when
// there is none there (a 4xx), an error when it names another resource
// than want or cannot be read.
func fetchPRM(ctx context.Context, c *http.Client, metadataURL, want string) (*oauthex.ProtectedResourceMetadata, error) {
	var doc struct {
		Resource string `json:"resource"`
	}
	found, err := getJSON(ctx, c, metadataURL, &doc)
	if err != nil || !found {
		return nil, err
	}
	if doc.Resource != want {
		return nil, fmt.Errorf("refusing to authorize: the protected resource metadata at %s is for %q, not %q", metadataURL, doc.Resource, want)
	}
	// The SDK's own read checks the authorization servers' URLs.
	return oauthex.GetProtectedResourceMetadata(ctx, metadataURL, want, c)
}

// legacyMetadata reads the authorisation server metadata at the root of a
// 2025-03-26 server without holding its issuer to the root; nil when there
// is none.
func legacyMetadata(ctx context.Context, c *http.Client, root string) (*oauthex.AuthServerMeta, error) {
	var asm oauthex.AuthServerMeta
	found, err := getJSON(ctx, c, root+"/.well-known/oauth-authorization-server", &asm)
	if err != nil || !found {
		return nil, err
	}
	for _, u := range []string{asm.AuthorizationEndpoint, asm.TokenEndpoint, asm.RegistrationEndpoint} {
		if u == "" {
			continue
		}
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "https" && !loopback(p.Hostname())) {
			return nil, fmt.Errorf("endpoint %q is neither https nor loopback", u)
		}
	}
	return &asm, nil
}

func loopback(host string) bool {
	return host == "localhost" || host == "127.0.0.1" || host == "::1"
}

// getJSON GETs u into v: false, nil for a 4xx answer.
func getJSON(ctx context.Context, c *http.Client, u string, v any) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, fmt.Errorf("GET %s: %w", u, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return false, fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 && resp.StatusCode < 500 {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return false, nil
	}
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v); err != nil {
		return false, fmt.Errorf("GET %s: not JSON metadata: %w", u, err)
	}
	return true, nil
}

// challengeParam is the parameter name of the first Bearer challenge that
// has it (resource_metadata from any challenge).
func challengeParam(cs []oauthex.Challenge, name string) string {
	for _, c := range cs {
		if v := c.Params[name]; v != "" && (c.Scheme == "bearer" || name == "resource_metadata") {
			return v
		}
	}
	return ""
}
