package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/myelin-run/myelin/mcp/oauth"
	"github.com/myelin-run/myelin/mcp/oauth/oauthtest"
)

// person reads what myelin prints on stderr and opens each URL it is told
// to open, as someone at the terminal would; what was printed is kept.
type person struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

var urlLine = regexp.MustCompile(`(?m)^  (http://\S+)$`)

func (p *person) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf.Write(b)
	for _, m := range urlLine.FindAllSubmatch(b, -1) {
		go func(u string) {
			if resp, err := http.Get(u); err == nil {
				resp.Body.Close()
			}
		}(string(m[1]))
	}
	return len(b), nil
}

func (p *person) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.buf.String()
}

// protected is a workspace whose --mcp-config names one HTTP server, srv,
// that asks for a sign-in; HOME is the test's own, so that tokens are kept
// there, and there is no browser to open.
func protected(t *testing.T) (as *oauthtest.AS, dir, config string) {
	t.Helper()
	home := approvals(t)
	t.Setenv("BROWSER", "")
	t.Setenv("DISPLAY", "")
	t.Setenv("WAYLAND_DISPLAY", "")
	as = oauthtest.NewAS(t)
	srv := oauthtest.NewMCP(t, as)
	doc, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"srv": map[string]any{"url": srv.URL}}})
	config = filepath.Join(home, "servers.json")
	if err := os.WriteFile(config, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	return as, workspaceWith(t, nil), config
}

// `myelin mcp login` signs in through the printed URL and keeps the
// tokens in a file only the user reads; a later non-interactive call uses
// them; neither prints a token.
func TestMCPLoginSignsInAndLaterCallsUseTheKeptTokens(t *testing.T) {
	as, dir, config := protected(t)
	var out bytes.Buffer
	p := &person{}
	if code := run(context.Background(), []string{"mcp", "login", "--workspace", dir, "--mcp-config", config, "srv"}, strings.NewReader(""), &out, p); code != exitOK {
		t.Fatalf("mcp login: exit %d: %s%s", code, out.String(), p.String())
	}
	if !strings.Contains(out.String(), "signed in to srv") || !strings.Contains(p.String(), as.URL+"/authorize?") {
		t.Fatalf("mcp login said %q, stderr %q", out.String(), p.String())
	}
	store, err := oauth.DefaultStore()
	if err != nil {
		t.Fatal(err)
	}
	matches, _ := filepath.Glob(filepath.Join(store.Dir, "*.json"))
	if len(matches) != 1 {
		t.Fatalf("tokens files %q, want one", matches)
	}
	if fi, err := os.Stat(matches[0]); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the tokens file: %v, %v; want mode 0600", fi, err)
	}
	callOut, callErr, code := cli(t, "tool", "call", "--workspace", dir, "--mcp-config", config, "srv--echo", `{"text":"signed"}`)
	if code != exitOK || callOut != "signed" {
		t.Fatalf("tool call: exit %d: %q %q", code, callOut, callErr)
	}
	printed := out.String() + p.String() + callOut + callErr
	for _, tok := range as.Tokens() {
		if strings.Contains(printed, tok) {
			t.Errorf("a token was printed: %q", printed)
		}
	}
	if len(as.Tokens()) == 0 {
		t.Fatal("no token was issued")
	}
}

// A run with no one to ask and no token kept says how to sign in, and
// asks the authorisation server nothing.
func TestACallWithNoTokenSaysHowToLogIn(t *testing.T) {
	as, dir, config := protected(t)
	_, errOut, code := cli(t, "tool", "call", "--workspace", dir, "--mcp-config", config, "srv--echo", `{"text":"x"}`)
	if code == exitOK || !strings.Contains(errOut, "run `myelin mcp login srv`") {
		t.Fatalf("exit %d, stderr %q; want a failure naming `myelin mcp login srv`", code, errOut)
	}
	if len(as.Log()) != 0 {
		t.Errorf("the authorization server was asked %q", as.Log())
	}
}

// --mcp-login signs in during the call itself, for a command that is not
// on a terminal.
func TestMCPLoginFlagSignsInDuringTheCall(t *testing.T) {
	_, dir, config := protected(t)
	var out bytes.Buffer
	p := &person{}
	code := run(context.Background(), []string{"tool", "call", "--mcp-login", "--workspace", dir, "--mcp-config", config, "srv--echo", `{"text":"inline"}`}, strings.NewReader(""), &out, p)
	if code != exitOK || out.String() != "inline" {
		t.Fatalf("exit %d: %q %q", code, out.String(), p.String())
	}
}

func TestMCPLoginRefusesWhatItCannotSignInTo(t *testing.T) {
	_, dir, config := protected(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"mcp", "login", "--workspace", dir, "--mcp-config", config}, "want one server's name"},
		{[]string{"mcp", "login", "--workspace", dir, "--mcp-config", config, "nope"}, `no MCP server "nope" (configured: srv)`},
	} {
		_, errOut, code := cli(t, tt.args...)
		if code != exitUsage || !strings.Contains(errOut, tt.want) {
			t.Errorf("%q: exit %d, %q; want a usage error saying %q", tt.args, code, errOut, tt.want)
		}
	}
}
