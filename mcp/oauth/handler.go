package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// MaxStepUps bounds the sign-ins a process runs in a row for a server's
// 403 insufficient_scope naming the same scopes: a server that refuses
// every token it is given must not send the user to the browser for ever.
// The count is per server URL and outlives connections (myelin connects
// again after a failed call); a 403 asking for other scopes starts it
// again.
const MaxStepUps = 3

// stepUps counts, per server URL, the sign-ins in a row for the same
// scopes.
var stepUps = struct {
	sync.Mutex
	m map[string]stepUpCount
}{m: map[string]stepUpCount{}}

type stepUpCount struct {
	scopes string
	n      int
}

// countStepUp notes a step-up of url for scopes and reports whether it
// is within MaxStepUps.
func countStepUp(url string, scopes []string) bool {
	key := strings.Join(slices.Sorted(slices.Values(scopes)), " ")
	stepUps.Lock()
	defer stepUps.Unlock()
	c := stepUps.m[url]
	if c.scopes != key {
		c = stepUpCount{scopes: key}
	}
	c.n++
	stepUps.m[url] = c
	return c.n <= MaxStepUps
}

// Interaction is how a person is reached for the authorisation code flow.
type Interaction struct {
	// Out is where the URL to open is printed.
	Out io.Writer
	// Open opens the URL in a browser; when nil or when it fails, the
	// printed URL is all.
	Open func(url string) error
}

// Options say what a Handler authorises and how.
type Options struct {
	Server string // the entry's name, for messages
	URL    string // the server's endpoint
	Config Config
	// Store keeps tokens between runs; nil keeps them for this process
	// only.
	Store *Store
	// Login reaches a person for the authorisation code flow; nil when
	// there is no one to ask, and a server that needs a sign-in is an
	// error naming `myelin mcp login`.
	Login *Interaction
	// Warn says what went wrong without failing the call (a token that
	// could not be kept). Nil discards it.
	Warn func(string)
	// Client makes the requests to authorisation servers; when nil, a
	// client whose requests time out after RequestTimeout. One whose
	// requests never time out lets an authorisation server that takes a
	// refresh and never answers hold the token source's lock, and every
	// later call to the server waits behind it.
	Client *http.Client
	// Scopes are asked for on top of those discovered: the ones an
	// earlier sign-in was granted.
	Scopes []string
}

// LoginNeededError is a server asking for a sign-in when no one can be
// asked.
type LoginNeededError struct {
	Server string
	Status string // the HTTP status it answered
	Scope  bool   // it wants more scopes than its token has
	// Bearer says it asked for a bearer token; without it, the server may
	// want a key of its own rather than a sign-in.
	Bearer bool
}

// Error names the server that needs a login and how to give it.
func (e *LoginNeededError) Error() string {
	why := "needs you to sign in"
	if e.Scope {
		why = "needs a sign-in with more scopes"
	}
	msg := fmt.Sprintf("MCP server %q answered %s: it %s: run `myelin mcp login %s`", e.Server, e.Status, why, e.Server)
	if !e.Bearer {
		msg += ` (or, if it takes a key of its own, give it in the entry's "headers")`
	}
	return msg
}

// Handler is the auth.OAuthHandler of one connection to one server: it
// gives the transport the token kept for the server (refreshed when
// expired, the new one kept), and when the server refuses it, runs the
// config's grant. It is safe for concurrent use.
type Handler struct {
	o      Options
	client *http.Client

	mu       sync.Mutex
	loaded   bool
	ts       oauth2.TokenSource
	code     *auth.AuthorizationCodeHandler // built at the first sign-in
	loop     *Loopback
	stepping bool // the sign-in running is for a 403's scopes
	forced   bool // a refresh was forced by a 401 (once a connection)
}

var _ auth.OAuthHandler = (*Handler)(nil)

// RequestTimeout bounds each request to an authorisation server made by
// a client of this package's (Options.Client nil, or package mcp's):
// discovery, registration, a token or its refresh, each one small POST
// or GET an authorisation server answers in well under a second.
const RequestTimeout = 30 * time.Second

// requestTimeout is RequestTimeout, shorter in tests.
var requestTimeout = RequestTimeout

// NewHandler returns the handler of the server o names.
func NewHandler(o Options) (*Handler, error) {
	if err := o.Config.Check(); err != nil {
		return nil, err
	}
	c := o.Client
	if c == nil {
		c = &http.Client{Timeout: requestTimeout}
	}
	return &Handler{o: o, client: c}, nil
}

// TokenSource is the source of the server's tokens: the one kept from an
// earlier run until this connection signs in; nil when there is none.
func (h *Handler) TokenSource(context.Context) (oauth2.TokenSource, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ts == nil && !h.loaded && h.o.Store != nil && h.grant() == GrantAuthorizationCode {
		h.loaded = true
		e, err := h.o.Store.Load(h.o.URL)
		if err != nil {
			return nil, err
		}
		if e != nil {
			h.o.Scopes = union(h.o.Scopes, e.Scopes)
			h.ts = h.keeping(e.config(), e.Token)
		}
	}
	return h.ts, nil
}

func (h *Handler) grant() string {
	if h.o.Config.Grant == "" {
		return GrantAuthorizationCode
	}
	return h.o.Config.Grant
}

// Authorize runs the config's grant after the server refused req with
// resp (401, or 403), and closes resp's body.
func (h *Handler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	defer resp.Body.Close()
	defer io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	stepUp := resp.StatusCode == http.StatusForbidden
	if stepUp {
		cs, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
		if challengeParam(cs, "error") != "insufficient_scope" {
			return nil // not for a sign-in to mend: the retry reports it
		}
		if !countStepUp(h.o.URL, splitScopes(challengeParam(cs, "scope"))) {
			return fmt.Errorf("MCP server %q still refuses for lack of scope %q after %d sign-ins for it; giving up", h.o.Server, challengeParam(cs, "scope"), MaxStepUps)
		}
	}
	h.mu.Lock()
	h.stepping = stepUp
	h.mu.Unlock()
	if !stepUp && h.grant() == GrantAuthorizationCode && h.refreshRefused(req) {
		return nil // the retry carries the new token
	}
	var ts oauth2.TokenSource
	var err error
	switch h.grant() {
	case GrantClientCredentials:
		ts, err = h.clientCredentials(ctx, req, resp)
	case GrantCrossApp:
		ts, err = h.crossApp(ctx, req, resp)
	default:
		if h.o.Login == nil {
			if h.o.Store != nil && stepUp {
				h.rememberScopes(resp)
			}
			cs, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
			bearer := slices.ContainsFunc(cs, func(c oauthex.Challenge) bool { return c.Scheme == "bearer" })
			return &LoginNeededError{Server: h.o.Server, Status: resp.Status, Scope: stepUp, Bearer: bearer}
		}
		return h.authorizationCode(ctx, req, resp)
	}
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.ts = ts
	h.mu.Unlock()
	return nil
}

// refreshRefused refreshes the kept token when the server refused it
// before its expiry (revoked, or no expiry given), once a connection:
// a refresh token still good spares a sign-in. It reports whether there
// is a new token.
func (h *Handler) refreshRefused(req *http.Request) bool {
	h.mu.Lock()
	k, _ := h.ts.(*keeper)
	forced := h.forced
	h.forced = true
	h.mu.Unlock()
	if k == nil || forced {
		return false
	}
	k.mu.Lock()
	t, c := k.entry.Token, k.entry.config()
	k.mu.Unlock()
	if t == nil || t.RefreshToken == "" || req.Header.Get("Authorization") != "Bearer "+t.AccessToken {
		return false
	}
	stale := *t
	stale.Expiry = time.Unix(1, 0) // expired: the source refreshes it
	ts := h.keeping(c, &stale)
	if _, err := ts.Token(); err != nil {
		return false
	}
	h.mu.Lock()
	h.ts = ts
	h.mu.Unlock()
	return true
}

// authorizationCode signs in through a browser: the SDK's handler, or for
// a 2025-03-26 server whose metadata it would refuse, the flow here.
func (h *Handler) authorizationCode(ctx context.Context, req *http.Request, resp *http.Response) error {
	d, err := discover(ctx, h.client, req.URL.String(), resp)
	if err != nil {
		return fmt.Errorf("MCP server %q: %w", h.o.Server, err)
	}
	code, err := h.codeHandler()
	if err != nil {
		return err
	}
	if d.legacy {
		return h.legacySignIn(ctx, d)
	}
	if err := code.Authorize(ctx, req, resp); err != nil {
		return fmt.Errorf("MCP server %q: signing in: %w", h.o.Server, err)
	}
	ts, _ := code.TokenSource(ctx)
	if ts == nil {
		return fmt.Errorf("MCP server %q: signing in gave no token", h.o.Server)
	}
	return nil
}

// codeHandler is the SDK's authorisation code handler of this connection,
// made at its first sign-in with the loopback redirect it listens on.
func (h *Handler) codeHandler() (*auth.AuthorizationCodeHandler, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.code != nil {
		return h.code, nil
	}
	loop, err := NewLoopback(h.o.Config.RedirectPort, h.o.Login)
	if err != nil {
		return nil, fmt.Errorf("MCP server %q: %w", h.o.Server, err)
	}
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:              loop.RedirectURL(),
		AuthorizationCodeFetcher: loop.Fetch,
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{
			Metadata: registration(loop.RedirectURL()),
		},
		ScopeFilter:         h.scopes,
		RequestRefreshToken: true,
		Client:              h.client,
		NewTokenSource: func(_ context.Context, c *oauth2.Config, t *oauth2.Token) (oauth2.TokenSource, error) {
			ts := h.keeping(c, t)
			h.mu.Lock()
			h.ts = ts
			h.mu.Unlock()
			return ts, nil
		},
	}
	if u := h.o.Config.ClientMetadataURL; u != "" {
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: u}
	}
	if id := h.o.Config.ClientID; id != "" {
		cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: id}
		if s := h.o.Config.ClientSecret; s != "" {
			cfg.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: s}
		}
	}
	code, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		return nil, fmt.Errorf("MCP server %q: the oauth config: %w", h.o.Server, err)
	}
	h.code, h.loop = code, loop
	return code, nil
}

// registration is what myelin registers itself with: a native client
// that wants refresh tokens.
func registration(redirect string) *oauthex.ClientRegistrationMetadata {
	return &oauthex.ClientRegistrationMetadata{
		RedirectURIs:  []string{redirect},
		ClientName:    "myelin",
		GrantTypes:    []string{"authorization_code", "refresh_token"},
		ResponseTypes: []string{"code"},
	}
}

// scopes are the scopes asked for: the config's when it names them, else
// those discovered; for a step-up, the config's and those the 403 named;
// with, always, those granted before.
func (h *Handler) scopes(discovered []string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.stepping:
		discovered = union(h.o.Config.Scopes, discovered)
	case len(h.o.Config.Scopes) > 0:
		discovered = h.o.Config.Scopes
	}
	return union(discovered, h.o.Scopes)
}

// rememberScopes adds the scopes a 403 asked for to the kept entry, so
// that the next `myelin mcp login` asks for them.
func (h *Handler) rememberScopes(resp *http.Response) {
	cs, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	want := challengeParam(cs, "scope")
	e, err := h.o.Store.Load(h.o.URL)
	if err != nil || e == nil || want == "" {
		return
	}
	e.Scopes = union(e.Scopes, splitScopes(want))
	if err := h.o.Store.Save(e); err != nil {
		h.warn(err.Error())
	}
}

// keeping is a source of the tokens of c that keeps each new one in the
// store, so that a refreshed token outlives this run.
func (h *Handler) keeping(c *oauth2.Config, t *oauth2.Token) oauth2.TokenSource {
	// The source refreshes for as long as the process runs: not in the
	// context of the request that signed in.
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, h.client)
	k := &keeper{base: c.TokenSource(ctx, t), h: h, entry: Entry{
		Server: h.o.Server, URL: h.o.URL, ClientID: c.ClientID, ClientSecret: c.ClientSecret,
		AuthURL: c.Endpoint.AuthURL, TokenURL: c.Endpoint.TokenURL, AuthStyle: c.Endpoint.AuthStyle,
		Scopes: c.Scopes,
	}}
	k.keep(t)
	return k
}

type keeper struct {
	base  oauth2.TokenSource
	h     *Handler
	mu    sync.Mutex
	entry Entry
}

func (k *keeper) Token() (*oauth2.Token, error) {
	t, err := k.base.Token()
	if err != nil {
		return nil, err
	}
	k.keep(t)
	return t, nil
}

// keep saves t when it is not the token kept already.
func (k *keeper) keep(t *oauth2.Token) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.h.o.Store == nil || (k.entry.Token != nil && k.entry.Token.AccessToken == t.AccessToken) {
		return
	}
	k.entry.Token = t
	if err := k.h.o.Store.Save(&k.entry); err != nil {
		k.h.warn(err.Error() + "; the token lasts for this run only")
	}
}

func (h *Handler) warn(msg string) {
	if h.o.Warn != nil {
		h.o.Warn(msg)
	}
}

// union is a followed by the members of b it lacks.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// IsLoginNeeded reports whether err is, or wraps, a LoginNeededError.
func IsLoginNeeded(err error) bool {
	var e *LoginNeededError
	return errors.As(err, &e)
}
