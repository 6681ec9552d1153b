package oauth

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/myelin-run/myelin/mcp/oauth/oauthtest"
	"golang.org/x/oauth2"
)

// browser is a person who opens every URL printed, at once, following
// the redirect back to the loopback listener.
func browser(out *bytes.Buffer) *Interaction {
	return &Interaction{Out: out, Open: func(u string) error {
		go func() {
			if resp, err := http.Get(u); err == nil {
				resp.Body.Close()
			}
		}()
		return nil
	}}
}

// call connects to the server through h, lists its tools and calls echo.
func call(t *testing.T, h *Handler, url string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	sess, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url, OAuthHandler: h, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return err
	}
	defer sess.Close()
	if _, err := sess.ListTools(ctx, nil); err != nil {
		return err
	}
	res, err := sess.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil {
		return err
	}
	if res.IsError {
		t.Fatalf("echo failed: %+v", res.Content)
	}
	return nil
}

func handler(t *testing.T, o Options) *Handler {
	t.Helper()
	h, err := NewHandler(o)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// A first sign-in discovers the server's authorisation server, registers,
// signs in with PKCE and keeps the tokens in a file only the user reads;
// a later connection, with no one to ask, uses them without signing in.
func TestASignInIsKeptAndUsedByTheNextConnection(t *testing.T) {
	as := oauthtest.NewAS(t)
	mcp := oauthtest.NewMCP(t, as)
	store := &Store{Dir: t.TempDir()}
	var out bytes.Buffer
	if err := call(t, handler(t, Options{Server: "srv", URL: mcp.URL, Store: store, Login: browser(&out)}), mcp.URL); err != nil {
		t.Fatal(err)
	}
	if want := []string{"register", "authorize ", "token authorization_code client_secret_basic"}; !slices.Equal(as.Log(), want) {
		t.Fatalf("the authorization server was asked %q, want %q", as.Log(), want)
	}
	if !strings.Contains(out.String(), as.URL+"/authorize?") {
		t.Errorf("the URL to open was not printed: %q", out.String())
	}
	fi, err := os.Stat(store.Path(mcp.URL))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("the tokens file has mode %v, want 0600", fi.Mode().Perm())
	}
	if err := call(t, handler(t, Options{Server: "srv", URL: mcp.URL, Store: store}), mcp.URL); err != nil {
		t.Fatalf("the kept token was not used: %v", err)
	}
	if len(as.Log()) != 3 {
		t.Errorf("the second connection signed in again: %q", as.Log())
	}
}

// A server that cannot be signed in to here fails with an error that says
// why, and its authorisation server is asked nothing: with no one to ask
// and no token, the error names `myelin mcp login`; resource metadata that
// names another resource is refused, since a token must not be asked for
// someone else's resource.
func TestRefusalsAskTheAuthorizationServerNothing(t *testing.T) {
	var out bytes.Buffer
	tests := []struct {
		name     string
		resource string // what the metadata names; the server's URL when ""
		login    *Interaction
		want     string
	}{
		{"no one to ask", "", nil, "run `myelin mcp login srv`"},
		{"another resource", "https://elsewhere.example/mcp", browser(&out), "refusing to authorize"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := oauthtest.NewAS(t)
			mcp := oauthtest.NewMCP(t, as)
			mcp.Resource = tt.resource
			err := call(t, handler(t, Options{Server: "srv", URL: mcp.URL, Store: &Store{Dir: t.TempDir()}, Login: tt.login}), mcp.URL)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error saying %q", err, tt.want)
			}
			if len(as.Log()) != 0 {
				t.Errorf("the authorization server was asked %q", as.Log())
			}
		})
	}
}

// A kept token that has expired, or that the server refuses before its
// expiry, is refreshed with the kept refresh token, without a sign-in,
// and the new one is kept.
func TestAStaleTokenIsRefreshedAndTheNewOneKept(t *testing.T) {
	for _, tt := range []struct {
		name   string
		expiry time.Time
	}{
		{"expired", time.Now().Add(-time.Hour)},
		{"refused before its expiry", time.Now().Add(time.Hour)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			as := oauthtest.NewAS(t)
			as.Clients["cli"] = "sec"
			mcp := oauthtest.NewMCP(t, as)
			store := &Store{Dir: t.TempDir()}
			stale, refresh := as.Issue("cli", nil)
			if err := store.Save(&Entry{Server: "srv", URL: mcp.URL, ClientID: "cli", ClientSecret: "sec", TokenURL: as.URL + "/token",
				AuthStyle: oauth2.AuthStyleInHeader, Token: &oauth2.Token{AccessToken: stale, RefreshToken: refresh, Expiry: tt.expiry}}); err != nil {
				t.Fatal(err)
			}
			if err := call(t, handler(t, Options{Server: "srv", URL: mcp.URL, Store: store}), mcp.URL); err != nil {
				t.Fatalf("%v (the server was asked %q)", err, as.Log())
			}
			if want := []string{"token refresh_token client_secret_basic"}; !slices.Equal(as.Log(), want) {
				t.Fatalf("the authorization server was asked %q, want %q", as.Log(), want)
			}
			e, err := store.Load(mcp.URL)
			if err != nil || e == nil || e.Token.AccessToken == stale {
				t.Fatalf("the refreshed token was not kept: %+v, %v", e, err)
			}
		})
	}
}

// A 403 insufficient_scope on a call signs in again for the scopes
// granted and those the call needs.
func TestAStepUpAsksForTheScopesHeldAndTheOnesNeeded(t *testing.T) {
	as := oauthtest.NewAS(t)
	as.Scopes = []string{"read", "write"}
	mcp := oauthtest.NewMCP(t, as)
	mcp.Scopes, mcp.CallScopes = []string{"read"}, []string{"write"}
	var out bytes.Buffer
	if err := call(t, handler(t, Options{Server: "srv", URL: mcp.URL, Config: Config{Scopes: []string{"read"}}, Login: browser(&out)}), mcp.URL); err != nil {
		t.Fatalf("%v (the server was asked %q)", err, as.Log())
	}
	var asked []string
	for _, l := range as.Log() {
		if scopes, ok := strings.CutPrefix(l, "authorize "); ok {
			asked = append(asked, strings.Join(slices.Sorted(slices.Values(strings.Fields(scopes))), " "))
		}
	}
	if want := []string{"read", "read write"}; !slices.Equal(asked, want) {
		t.Fatalf("sign-ins asked %q, want %q", asked, want)
	}
}

// A server that refuses every token it is given, asking for the same
// scope, sends no one to the browser more than MaxStepUps times in a row,
// though each failed call ends the connection and the next makes a new
// one.
func TestStepUpsAreBoundedAcrossConnections(t *testing.T) {
	as := oauthtest.NewAS(t)
	mcp := oauthtest.NewMCP(t, as)
	mcp.CallScopes = []string{"never-granted"}
	as.Withheld = mcp.CallScopes
	store := &Store{Dir: t.TempDir()}
	var out bytes.Buffer
	var last error
	for range MaxStepUps + 2 {
		last = call(t, handler(t, Options{Server: "srv", URL: mcp.URL, Store: store, Login: browser(&out)}), mcp.URL)
		if last == nil {
			t.Fatal("a call without its scope succeeded")
		}
	}
	if !strings.Contains(last.Error(), "giving up") {
		t.Errorf("the last call failed with %v, want it to say it gave up", last)
	}
	n := 0
	for _, l := range as.Log() {
		if strings.HasPrefix(l, "authorize") {
			n++
		}
	}
	if n != 1+MaxStepUps { // the first sign-in, then the step-ups
		t.Errorf("%d sign-ins, want %d: %q", n, 1+MaxStepUps, as.Log())
	}
}

// A 2025-03-26 server has no resource metadata, and the metadata at its
// root names an issuer other than the root (which RFC 8414 would refuse):
// myelin signs in with what it names, and keeps the token.
func TestA20250326ServerIsSignedInToThroughItsRootMetadata(t *testing.T) {
	as := oauthtest.NewAS(t)
	mcp := oauthtest.NewMCP(t, as)
	mcp.Legacy = true
	store := &Store{Dir: t.TempDir()}
	var out bytes.Buffer
	if err := call(t, handler(t, Options{Server: "srv", URL: mcp.URL, Store: store, Login: browser(&out)}), mcp.URL); err != nil {
		t.Fatalf("%v (the server was asked %q)", err, as.Log())
	}
	if want := []string{"register", "authorize ", "token authorization_code client_secret_basic"}; !slices.Equal(as.Log(), want) {
		t.Fatalf("the authorization server was asked %q, want %q", as.Log(), want)
	}
	if e, err := store.Load(mcp.URL); err != nil || e == nil {
		t.Fatalf("the token was not kept: %v", err)
	}
}

func pemKey(t *testing.T, key any) string {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// Client credentials authenticate as the config or the server's metadata
// says: a secret in the header or the body, or an assertion signed with
// an EC or RSA key.
func TestClientCredentialsAuthenticateAsAsked(t *testing.T) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	rs, _ := rsa.GenerateKey(rand.Reader, 2048)
	tests := []struct {
		name     string
		methods  []string // the server's
		cfg      Config
		key      any // the public key the server knows
		wantUsed string
	}{
		{"basic from the metadata", []string{"client_secret_basic"}, Config{ClientSecret: "sec"}, nil, "client_secret_basic"},
		{"post from the metadata", []string{"client_secret_post"}, Config{ClientSecret: "sec"}, nil, "client_secret_post"},
		{"post from the config", nil, Config{ClientSecret: "sec", AuthMethod: "client_secret_post"}, nil, "client_secret_post"},
		{"an EC key", []string{"private_key_jwt"}, Config{PrivateKey: pemKey(t, ec)}, &ec.PublicKey, "private_key_jwt"},
		{"an RSA key", []string{"private_key_jwt"}, Config{PrivateKey: pemKey(t, rs), SigningAlg: "RS256"}, &rs.PublicKey, "private_key_jwt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := oauthtest.NewAS(t)
			as.AuthMethods = tt.methods
			as.Clients["svc"] = "sec"
			if tt.key != nil {
				as.Keys["svc"] = tt.key
			}
			mcp := oauthtest.NewMCP(t, as)
			cfg := tt.cfg
			cfg.Grant, cfg.ClientID = GrantClientCredentials, "svc"
			if err := call(t, handler(t, Options{Server: "srv", URL: mcp.URL, Config: cfg}), mcp.URL); err != nil {
				t.Fatalf("%v (the server was asked %q)", err, as.Log())
			}
			if want := []string{"token client_credentials " + tt.wantUsed}; !slices.Equal(as.Log(), want) {
				t.Fatalf("the authorization server was asked %q, want %q", as.Log(), want)
			}
		})
	}
}

// The sign-in's client is a client ID metadata document where the server
// takes one, else the pre-registered client, else one registered now;
// it authenticates at the token endpoint as the metadata allows.
func TestTheSignInsClientAndItsAuthentication(t *testing.T) {
	const cimd = "https://myelin.example/client.json"
	tests := []struct {
		name    string
		as      func(*oauthtest.AS)
		cfg     Config
		wantLog []string
	}{
		{"registered now", func(*oauthtest.AS) {}, Config{},
			[]string{"register", "authorize ", "token authorization_code client_secret_basic"}},
		{"pre-registered, basic", func(as *oauthtest.AS) { as.NoRegistration = true }, Config{ClientID: "pre", ClientSecret: "sec"},
			[]string{"authorize ", "token authorization_code client_secret_basic"}},
		{"pre-registered, post", func(as *oauthtest.AS) { as.AuthMethods = []string{"client_secret_post"} }, Config{ClientID: "pre", ClientSecret: "sec"},
			[]string{"authorize ", "token authorization_code client_secret_post"}},
		// The URL is the client id, and there is no secret: the SDK leaves
		// the method to oauth2's detection, which tries Basic first.
		{"a metadata document", func(as *oauthtest.AS) { as.CIMD = true }, Config{ClientMetadataURL: cimd, ClientID: "pre"},
			[]string{"authorize ", "token authorization_code client_secret_basic", `refused: bad secret for "` + cimd + `"`, "token authorization_code none"}},
		{"a metadata document the server does not take", func(as *oauthtest.AS) {}, Config{ClientMetadataURL: cimd},
			[]string{"register", "authorize ", "token authorization_code client_secret_basic"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := oauthtest.NewAS(t)
			as.Clients["pre"] = "sec"
			tt.as(as)
			mcp := oauthtest.NewMCP(t, as)
			var out bytes.Buffer
			if err := call(t, handler(t, Options{Server: "srv", URL: mcp.URL, Config: tt.cfg, Login: browser(&out)}), mcp.URL); err != nil {
				t.Fatalf("%v (the server was asked %q)", err, as.Log())
			}
			if !slices.Equal(as.Log(), tt.wantLog) {
				t.Fatalf("the authorization server was asked %q, want %q", as.Log(), tt.wantLog)
			}
		})
	}
}

// Cross-app access exchanges the ID token at the identity provider for an
// identity assertion grant, which the MCP server's authorisation server
// takes from the client, authenticated as its metadata asks.
func TestCrossAppAccessExchangesTheIDTokenForAGrant(t *testing.T) {
	idp := oauthtest.NewIdP(t)
	idp.ForClient = "xaa"
	as := oauthtest.NewAS(t)
	as.IdP = idp
	as.Clients["xaa"] = "sec"
	mcp := oauthtest.NewMCP(t, as)
	cfg := Config{Grant: GrantCrossApp, ClientID: "xaa", ClientSecret: "sec", IdP: &IdP{Issuer: idp.URL, ClientID: "idp-client", IDToken: idp.IDToken}}
	if err := call(t, handler(t, Options{Server: "srv", URL: mcp.URL, Config: cfg}), mcp.URL); err != nil {
		t.Fatalf("%v (the IdP was asked %q, the authorization server %q)", err, idp.Log(), as.Log())
	}
	if want := []string{"exchange urn:ietf:params:oauth:token-type:id-jag"}; !slices.Equal(idp.Log(), want) {
		t.Errorf("the IdP was asked %q, want %q", idp.Log(), want)
	}
	if want := []string{"token urn:ietf:params:oauth:grant-type:jwt-bearer client_secret_basic"}; !slices.Equal(as.Log(), want) {
		t.Errorf("the authorization server was asked %q, want %q", as.Log(), want)
	}
}

// A refresh the authorisation server takes and never answers does not
// hold the call for ever: the handler's own client gives up after its
// timeout (the first refresh's lock is not kept), and the call, or the
// next, refreshes again and gets its token.
func TestARefreshNeverAnsweredDoesNotHoldTheCall(t *testing.T) {
	timeout := requestTimeout
	requestTimeout = 300 * time.Millisecond
	t.Cleanup(func() { requestTimeout = timeout })
	as := oauthtest.NewAS(t)
	as.Clients["cli"] = "sec"
	mcp := oauthtest.NewMCP(t, as)
	var asked atomic.Int32
	asURL, _ := url.Parse(as.URL)
	forward := httputil.NewSingleHostReverseProxy(asURL)
	release := make(chan struct{})
	hanging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if asked.Add(1) == 1 {
			select { // the first refresh: taken, never answered
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		forward.ServeHTTP(w, r)
	}))
	t.Cleanup(hanging.Close)
	t.Cleanup(func() { close(release) }) // before the server's Close (cleanups run last first)
	store := &Store{Dir: t.TempDir()}
	stale, refresh := as.Issue("cli", nil)
	if err := store.Save(&Entry{Server: "srv", URL: mcp.URL, ClientID: "cli", ClientSecret: "sec", TokenURL: hanging.URL + "/token",
		AuthStyle: oauth2.AuthStyleInHeader, Token: &oauth2.Token{AccessToken: stale, RefreshToken: refresh, Expiry: time.Now().Add(-time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	h := handler(t, Options{Server: "srv", URL: mcp.URL, Store: store})
	first := make(chan error, 1)
	go func() { first <- call(t, h, mcp.URL) }()
	select {
	case <-first: // ended: refreshed again within it, or failed
	case <-time.After(20 * time.Second):
		t.Fatal("the call whose refresh was never answered still waits: the handler's client has no timeout")
	}
	if err := call(t, h, mcp.URL); err != nil {
		t.Fatalf("the next call, the server answering again: %v (asked %d times)", err, asked.Load())
	}
	if asked.Load() < 2 {
		t.Errorf("the token endpoint was asked %d times; want the refresh asked again after the one never answered", asked.Load())
	}
}
