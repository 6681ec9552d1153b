package mcp

import (
	"strings"
	"testing"
)

func TestAnOAuthEntryHasItsVariablesExpanded(t *testing.T) {
	doc := `{"mcpServers":{"svc":{"url":"https://mcp.example/mcp","oauth":{"grant":"client_credentials",
		"clientId":"${ID}","clientSecret":"${SECRET}","scopes":["${SCOPE:-read}"]}}}}`
	servers, err := ParseConfig("c.json", []byte(doc), env(map[string]string{"ID": "svc-id", "SECRET": "s3cret"}))
	if err != nil {
		t.Fatal(err)
	}
	o := servers[0].OAuth
	if o == nil || o.ClientID != "svc-id" || o.ClientSecret != "s3cret" || len(o.Scopes) != 1 || o.Scopes[0] != "read" || servers[0].Problem != "" {
		t.Fatalf("oauth %+v, problem %q", o, servers[0].Problem)
	}
	servers, err = ParseConfig("c.json", []byte(doc), env(map[string]string{"ID": "svc-id"}))
	if err != nil || !strings.Contains(servers[0].Problem, "oauth.clientSecret uses ${SECRET}") {
		t.Fatalf("an unset secret: problem %q, %v", servers[0].Problem, err)
	}
}

func TestABadOAuthEntryIsAnErrorNamingTheField(t *testing.T) {
	for doc, want := range map[string]string{
		`{"mcpServers":{"a":{"command":"x","oauth":{}}}}`:                                               `"oauth" is for HTTP servers`,
		`{"mcpServers":{"a":{"url":"http://h","oauth":{"grant":"password"}}}}`:                          `oauth.grant "password" is not one myelin runs`,
		`{"mcpServers":{"a":{"url":"http://h","oauth":{"grant":"client_credentials","clientId":"c"}}}}`: `needs oauth.clientSecret or oauth.privateKey`,
		`{"mcpServers":{"a":{"url":"http://h","oauth":{"grant":"cross_app","clientId":"c"}}}}`:          `oauth.idp`,
		`{"mcpServers":{"a":{"url":"http://h","oauth":{"authMethod":"tls_client_auth"}}}}`:              `oauth.authMethod "tls_client_auth"`,
		`{"mcpServers":{"a":{"url":"http://h","oauth":{"signingAlg":"HS256"}}}}`:                        `oauth.signingAlg "HS256"`,
		`{"mcpServers":{"a":{"url":"http://h","oauth":{"redirectPort":70000}}}}`:                        `oauth.redirectPort 70000`,
	} {
		_, err := ParseConfig("c.json", []byte(doc), env(nil))
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `server "a"`) {
			t.Errorf("%s: err = %v, want it to say %q", doc, err, want)
		}
	}
}

// An entry that sends its own Authorization header is not signed in for.
func TestAnEntryWithItsOwnAuthorizationGetsNoOAuthHandler(t *testing.T) {
	o := &Options{}
	if authHandler(Server{Name: "a", URL: "http://h", Headers: map[string]string{"authorization": "Bearer x"}}, o) != nil {
		t.Error("an entry with an Authorization header got an OAuth handler")
	}
	if authHandler(Server{Name: "a", URL: "http://h"}, o) == nil {
		t.Error("an entry without one got no OAuth handler")
	}
}
