// Package oauthtest is a small OAuth 2.1 authorisation server and an MCP
// server it protects, on loopback, for the tests of package oauth and of
// the CLI. The authorisation server approves every request at once (no
// person), checks PKCE, client authentication and client assertions, and
// records what it was asked. It is for tests only: it must not be used to
// protect anything.
package oauthtest

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// AS is the authorisation server. Set its fields before the first
// request.
type AS struct {
	URL string
	// AuthMethods are the token endpoint's authentication methods
	// (client_secret_basic when empty).
	AuthMethods []string
	// Scopes are its scopes_supported (none when empty).
	Scopes []string
	// Clients are pre-registered clients: id to secret.
	Clients map[string]string
	// Keys are the public keys of clients that sign assertions: id to key.
	Keys map[string]crypto.PublicKey
	// NoRegistration leaves dynamic registration out of its metadata.
	NoRegistration bool
	// Withheld are scopes it never grants, though asked.
	Withheld []string
	// CIMD says it takes client ID metadata documents (a URL as client id).
	CIMD bool
	// IdP, when set, is the identity provider whose identity assertion
	// grants it takes (the jwt-bearer grant of cross-app access).
	IdP *IdP

	mu       sync.Mutex
	log      []string
	codes    map[string]grant // code to what was granted
	tokens   map[string]grant // access token to what it grants
	refresh  map[string]grant
	verifier map[string]string // code to its PKCE challenge
}

type grant struct {
	client string
	scopes []string
}

// NewAS starts an authorisation server, closed with the test.
func NewAS(t testing.TB) *AS {
	as := &AS{Clients: map[string]string{}, Keys: map[string]crypto.PublicKey{},
		codes: map[string]grant{}, tokens: map[string]grant{}, refresh: map[string]grant{}, verifier: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", as.metadata)
	mux.HandleFunc("POST /register", as.register)
	mux.HandleFunc("GET /authorize", as.authorize)
	mux.HandleFunc("POST /token", as.token)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	as.URL = srv.URL
	return as
}

// Log is what the server was asked, in order: "register", "authorize
// SCOPES", "token GRANT_TYPE METHOD", and the refusals, "refused WHY".
func (as *AS) Log() []string {
	as.mu.Lock()
	defer as.mu.Unlock()
	return slices.Clone(as.log)
}

// Tokens are the access and refresh tokens it has issued.
func (as *AS) Tokens() []string {
	as.mu.Lock()
	defer as.mu.Unlock()
	var out []string
	for t := range as.tokens {
		out = append(out, t)
	}
	for t := range as.refresh {
		out = append(out, t)
	}
	return out
}

// Issue makes a token pair for client with scopes, as if granted earlier:
// the refresh token stays good, the access token is not.
func (as *AS) Issue(client string, scopes []string) (access, refresh string) {
	as.mu.Lock()
	defer as.mu.Unlock()
	access, refresh = "stale-"+rand.Text(), "rt-"+rand.Text()
	as.refresh[refresh] = grant{client, scopes}
	return access, refresh
}

func (as *AS) note(format string, args ...any) {
	as.mu.Lock()
	as.log = append(as.log, fmt.Sprintf(format, args...))
	as.mu.Unlock()
}

func (as *AS) metadata(w http.ResponseWriter, _ *http.Request) {
	methods := as.AuthMethods
	if len(methods) == 0 {
		methods = []string{"client_secret_basic"}
	}
	m := map[string]any{
		"issuer": as.URL, "authorization_endpoint": as.URL + "/authorize", "token_endpoint": as.URL + "/token",
		"response_types_supported": []string{"code"}, "code_challenge_methods_supported": []string{"S256"},
		"grant_types_supported":                 []string{"authorization_code", "refresh_token", "client_credentials"},
		"token_endpoint_auth_methods_supported": methods,
	}
	if !as.NoRegistration {
		m["registration_endpoint"] = as.URL + "/register"
	}
	if len(as.Scopes) > 0 {
		m["scopes_supported"] = as.Scopes
	}
	if as.CIMD {
		m["client_id_metadata_document_supported"] = true
	}
	writeJSON(w, http.StatusOK, m)
}

func (as *AS) register(w http.ResponseWriter, r *http.Request) {
	var md oauthex.ClientRegistrationMetadata
	json.NewDecoder(r.Body).Decode(&md)
	id, secret := "client-"+rand.Text(), "secret-"+rand.Text()
	as.mu.Lock()
	as.Clients[id] = secret
	as.mu.Unlock()
	as.note("register")
	writeJSON(w, http.StatusCreated, map[string]any{"client_id": id, "client_secret": secret,
		"redirect_uris": md.RedirectURIs, "token_endpoint_auth_method": "client_secret_basic"})
}

// authorize approves at once: it redirects to the redirect URI with a code.
func (as *AS) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	as.note("authorize %s", q.Get("scope"))
	if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("resource") == "" {
		as.note("refused: no PKCE S256 challenge or no resource")
		http.Error(w, "PKCE S256 and resource are required", http.StatusBadRequest)
		return
	}
	code := "code-" + rand.Text()
	as.mu.Lock()
	var scopes []string
	for _, sc := range strings.Fields(q.Get("scope")) {
		if !slices.Contains(as.Withheld, sc) {
			scopes = append(scopes, sc)
		}
	}
	as.codes[code] = grant{q.Get("client_id"), scopes}
	as.verifier[code] = q.Get("code_challenge")
	as.mu.Unlock()
	back, err := url.Parse(q.Get("redirect_uri"))
	if err != nil {
		http.Error(w, "bad redirect_uri", http.StatusBadRequest)
		return
	}
	v := back.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	back.RawQuery = v.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

func (as *AS) token(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	client, method, err := as.client(r)
	gt := r.PostForm.Get("grant_type")
	as.note("token %s %s", gt, method)
	if err != nil {
		as.note("refused: %v", err)
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client", "error_description": err.Error()})
		return
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	var g grant
	switch gt {
	case "authorization_code":
		code := r.PostForm.Get("code")
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if base64.RawURLEncoding.EncodeToString(sum[:]) != as.verifier[code] || as.codes[code].client != client {
			as.log = append(as.log, "refused: code or verifier")
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		g = as.codes[code]
		delete(as.codes, code)
	case "refresh_token":
		old, ok := as.refresh[r.PostForm.Get("refresh_token")]
		if !ok || old.client != client {
			as.log = append(as.log, "refused: refresh token")
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		g = old
	case "client_credentials":
		g = grant{client, strings.Fields(r.PostForm.Get("scope"))}
	case "urn:ietf:params:oauth:grant-type:jwt-bearer":
		if as.IdP == nil || !as.IdP.granted(r.PostForm.Get("assertion"), client) {
			as.log = append(as.log, "refused: assertion")
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		g = grant{client, strings.Fields(r.PostForm.Get("scope"))}
	default:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	access, refresh := "at-"+rand.Text(), "rt-"+rand.Text()
	as.tokens[access] = g
	as.refresh[refresh] = g
	writeJSON(w, http.StatusOK, map[string]any{"access_token": access, "token_type": "Bearer", "expires_in": 3600,
		"refresh_token": refresh, "scope": strings.Join(g.scopes, " ")})
}

// client authenticates the token request: Basic, a secret in the body,
// a signed assertion, or a public client's bare id.
func (as *AS) client(r *http.Request) (id, method string, err error) {
	as.mu.Lock()
	defer as.mu.Unlock()
	if u, p, ok := r.BasicAuth(); ok {
		u, _ = url.QueryUnescape(u)
		p, _ = url.QueryUnescape(p)
		if s, known := as.Clients[u]; !known || s != p {
			return "", "client_secret_basic", fmt.Errorf("bad secret for %q", u)
		}
		return u, "client_secret_basic", nil
	}
	if a := r.PostForm.Get("client_assertion"); a != "" {
		id, err := as.assertion(a)
		return id, "private_key_jwt", err
	}
	id = r.PostForm.Get("client_id")
	if s := r.PostForm.Get("client_secret"); s != "" {
		if as.Clients[id] != s {
			return "", "client_secret_post", fmt.Errorf("bad secret for %q", id)
		}
		return id, "client_secret_post", nil
	}
	return id, "none", nil
}

// assertion checks a client assertion JWT (RFC 7523): signed by the key
// of its issuer, about itself, for this server, not expired.
func (as *AS) assertion(jwt string) (string, error) {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return "", fmt.Errorf("the assertion is not a JWT")
	}
	var claims struct {
		Iss, Sub, Aud string
		Exp           int64
	}
	body, _ := base64.RawURLEncoding.DecodeString(parts[1])
	json.Unmarshal(body, &claims)
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	ok := false
	switch k := as.Keys[claims.Iss].(type) {
	case *ecdsa.PublicKey:
		ok = len(sig) == 64 && ecdsa.Verify(k, sum[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:]))
	case *rsa.PublicKey:
		ok = rsa.VerifyPKCS1v15(k, crypto.SHA256, sum[:], sig) == nil
	}
	switch {
	case !ok:
		return "", fmt.Errorf("the assertion's signature does not verify for %q", claims.Iss)
	case claims.Sub != claims.Iss || claims.Aud != as.URL:
		return "", fmt.Errorf("the assertion is about %q for %q", claims.Sub, claims.Aud)
	case time.Unix(claims.Exp, 0).Before(time.Now()):
		return "", fmt.Errorf("the assertion has expired")
	}
	return claims.Iss, nil
}

// verify is the MCP server's token check.
func (as *AS) verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	as.mu.Lock()
	defer as.mu.Unlock()
	g, ok := as.tokens[token]
	if !ok {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{Scopes: g.scopes, Expiration: time.Now().Add(time.Hour)}, nil
}

// IdP is an enterprise identity provider that exchanges the ID token it
// knows for identity assertion grants (RFC 8693), for a client of the MCP
// server's authorisation server.
type IdP struct {
	URL     string
	IDToken string // the one ID token it takes
	// ForClient is the client of the MCP server's authorisation server the
	// grants are for.
	ForClient string

	mu     sync.Mutex
	grants map[string]bool
	log    []string
}

// NewIdP starts an identity provider, closed with the test.
func NewIdP(t testing.TB) *IdP {
	idp := &IdP{IDToken: "id-" + rand.Text(), grants: map[string]bool{}}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	idp.URL = srv.URL
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"issuer": idp.URL, "token_endpoint": idp.URL + "/token"})
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		f := r.PostForm
		idp.mu.Lock()
		defer idp.mu.Unlock()
		idp.log = append(idp.log, "exchange "+f.Get("requested_token_type"))
		if f.Get("grant_type") != "urn:ietf:params:oauth:grant-type:token-exchange" || f.Get("subject_token") != idp.IDToken ||
			f.Get("subject_token_type") != "urn:ietf:params:oauth:token-type:id_token" || f.Get("audience") == "" || f.Get("resource") == "" {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
			return
		}
		jag := "jag-" + rand.Text()
		idp.grants[jag] = true
		writeJSON(w, http.StatusOK, map[string]any{"access_token": jag, "token_type": "N_A",
			"issued_token_type": "urn:ietf:params:oauth:token-type:id-jag"})
	})
	return idp
}

// Log is what the identity provider was asked.
func (idp *IdP) Log() []string {
	idp.mu.Lock()
	defer idp.mu.Unlock()
	return slices.Clone(idp.log)
}

func (idp *IdP) granted(jag, client string) bool {
	idp.mu.Lock()
	defer idp.mu.Unlock()
	return idp.grants[jag] && client == idp.ForClient
}

// MCP is the protected MCP server.
type MCP struct {
	URL string // its endpoint, …/mcp
	// Scopes are needed for every request, CallScopes on top for
	// tools/call; a request whose token lacks them gets 403
	// insufficient_scope naming them.
	Scopes, CallScopes []string
	// Resource, when set, is the resource its metadata names in place of
	// its URL.
	Resource string
	// Legacy makes it a 2025-03-26 server: no resource metadata, and the
	// authorisation server's metadata served at its own root (naming the
	// authorisation server's issuer, not the root).
	Legacy bool
}

// NewMCP starts an MCP server protected by as, with one tool, echo, that
// answers its text; closed with the test.
func NewMCP(t testing.TB, as *AS) *MCP {
	server := sdk.NewServer(&sdk.Implementation{Name: "protected", Version: "1"}, nil)
	sdk.AddTool(server, &sdk.Tool{Name: "echo", Description: "Answers its text."},
		func(_ context.Context, _ *sdk.CallToolRequest, in struct {
			Text string `json:"text"`
		}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: in.Text}}}, nil, nil
		})
	inner := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server }, &sdk.StreamableHTTPOptions{Stateless: true})
	m := &MCP{}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	m.URL = srv.URL + "/mcp"
	prm := srv.URL + "/.well-known/oauth-protected-resource/mcp"
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		if !m.Legacy {
			http.NotFound(w, r)
			return
		}
		as.metadata(w, r)
	})
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		if m.Legacy {
			http.NotFound(w, r)
			return
		}
		res := m.Resource
		if res == "" {
			res = m.URL
		}
		auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
			Resource: res, AuthorizationServers: []string{as.URL}, ScopesSupported: as.Scopes,
		}).ServeHTTP(w, r)
	})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		scopes := m.Scopes
		if r.Method == http.MethodPost && calls(r) {
			scopes = append(slices.Clone(scopes), m.CallScopes...)
		}
		opts := &auth.RequireBearerTokenOptions{ResourceMetadataURL: prm, Scopes: scopes}
		if m.Legacy {
			opts.ResourceMetadataURL = ""
		}
		auth.RequireBearerToken(as.verify, opts)(
			http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				inner.ServeHTTP(w, r)
			})).ServeHTTP(&stepUp{ResponseWriter: w}, r)
	})
	return m
}

// calls reports whether the request is a tools/call, leaving its body to
// be read again.
func calls(r *http.Request) bool {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	r.Body = io.NopCloser(bytes.NewReader(body))
	var msg struct{ Method string }
	json.Unmarshal(body, &msg)
	return msg.Method == "tools/call"
}

// stepUp turns the middleware's 403 into one that says
// error="insufficient_scope", as the MCP specification's step-up wants.
type stepUp struct{ http.ResponseWriter }

func (s *stepUp) WriteHeader(code int) {
	if code == http.StatusForbidden {
		h := s.Header()
		if c := h.Get("WWW-Authenticate"); c != "" {
			h.Set("WWW-Authenticate", c+`, error="insufficient_scope"`)
		}
	}
	s.ResponseWriter.WriteHeader(code)
}

// Unwrap lets the SDK's handler flush the streams it holds open (a
// subscriptions/listen answers an acknowledgement first and stays open):
// without it every event waited in the buffer and a client's Connect
// hung.
func (s *stepUp) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}
