package mcp

import (
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/myelin-run/myelin/mcp/oauth"
	"github.com/myelin-run/myelin/telemetry"
)

// oauthClient makes the requests to authorisation servers: a token
// fetched or refreshed within a call carries the call's traceparent, as
// the call's own requests do (http.go); nothing when telemetry is off.
// Each request times out after oauth.RequestTimeout: a refresh the
// server never answered held its token source's lock for good.
var oauthClient = &http.Client{Transport: telemetry.Transport(http.DefaultTransport), Timeout: oauth.RequestTimeout}

// Auth says how the HTTP servers of a Set sign in when they ask for
// authorisation (package oauth does the signing in).
type Auth struct {
	// Login reaches a person for a sign-in in a browser; when nil, a
	// server that needs one fails to start, and its error names
	// `myelin mcp login`.
	Login *oauth.Interaction
	// Store keeps tokens between runs; oauth.DefaultStore when nil (and
	// none kept when there is no home directory).
	Store *oauth.Store
	// Scopes are asked for on top of those the server names.
	Scopes []string
	// Warn says what went wrong without stopping a server (a token that
	// could not be kept); nil discards it.
	Warn func(string)
}

// authHandler is the OAuth handler of an HTTP server's transport; nil for
// a server whose entry sends its own Authorization header.
func authHandler(s Server, o *Options) auth.OAuthHandler {
	for k := range s.Headers {
		if strings.EqualFold(k, "Authorization") {
			return nil
		}
	}
	cfg := oauth.Config{}
	if s.OAuth != nil {
		cfg = *s.OAuth
	}
	store := o.Auth.Store
	if store == nil {
		store, _ = oauth.DefaultStore()
	}
	h, err := oauth.NewHandler(oauth.Options{
		Server: s.Name, URL: s.URL, Config: cfg, Store: store,
		Login: o.Auth.Login, Warn: o.Auth.Warn, Scopes: o.Auth.Scopes,
		Client: oauthClient,
	})
	if err != nil { // the config was checked when it was read
		return nil
	}
	return h
}
