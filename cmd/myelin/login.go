package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/myelin-run/myelin/mcp"
	"github.com/myelin-run/myelin/mcp/oauth"
	"github.com/myelin-run/myelin/workspace"
)

// loginTimeout bounds `myelin mcp login`: the time a person has to sign
// in, as well as to connect.
const loginTimeout = 5 * time.Minute

// mcpAuth is how the CLI's MCP servers sign in: the URL printed on
// stderr and opened in a browser, tokens kept in the default store,
// warnings on stderr. Login is dropped by callers when no one is there.
func mcpAuth(stderr io.Writer) mcp.Auth {
	return mcp.Auth{
		Login: &oauth.Interaction{Out: stderr, Open: openBrowser},
		Warn:  func(msg string) { fmt.Fprintln(stderr, "myelin:", msg) },
	}
}

// openBrowser opens url with $BROWSER (a list of commands separated by
// colons, each given the URL, or with %s replaced by it), else the
// system's opener when there is a display. It does not wait for the
// browser.
func openBrowser(url string) error {
	var cmds [][]string
	if b := os.Getenv("BROWSER"); b != "" {
		for _, c := range strings.Split(b, ":") {
			if words := strings.Fields(c); len(words) > 0 {
				cmds = append(cmds, words)
			}
		}
	} else {
		switch runtime.GOOS {
		case "darwin":
			cmds = [][]string{{"open"}}
		case "windows":
			cmds = [][]string{{"rundll32", "url.dll,FileProtocolHandler"}}
		default:
			if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
				return errors.New("no $BROWSER and no display")
			}
			cmds = [][]string{{"xdg-open"}}
		}
	}
	var err error
	for _, words := range cmds {
		args, put := words[1:], false
		for i, a := range args {
			if strings.Contains(a, "%s") {
				args[i], put = strings.ReplaceAll(a, "%s", url), true
			}
		}
		if !put {
			args = append(args, url)
		}
		c := exec.Command(words[0], args...)
		if err = c.Start(); err == nil {
			go c.Wait()
			return nil
		}
	}
	return err
}

// mcpLoginCommand is `myelin mcp login SERVER`: it signs in to the HTTP
// server anew (the tokens kept for it are replaced) and says where the
// tokens are kept. It never prints a token.
func mcpLoginCommand(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	const name = "mcp login"
	var workspaceDir string
	var f mcpFlags
	fs := newFlagSet("mcp")
	fs.StringVar(&workspaceDir, "workspace", ".", "the workspace root `DIR`")
	f.add(fs)
	pos, code, done := parseCommand(name, mcpUsage, fs, args, stdout, stderr)
	if done {
		return code
	}
	if len(pos) != 1 {
		return usageError(stderr, name, fmt.Sprintf("want one server's name, got %q", pos))
	}
	ws, err := workspace.Open(workspaceDir)
	if err != nil {
		return usageError(stderr, name, err.Error())
	}
	defer ws.Close()
	f.trust = mcpTrust{ask: isTerminal(stdin) && isTerminal(stderr), in: stdin, out: stderr}
	servers, err := mcpServers(ws, f, stderr)
	if err != nil {
		return usageError(stderr, name, err.Error())
	}
	var s *mcp.Server
	var names []string
	for i := range servers {
		names = append(names, servers[i].Name)
		if servers[i].Name == pos[0] {
			s = &servers[i]
		}
	}
	switch {
	case s == nil:
		return usageError(stderr, name, fmt.Sprintf("no MCP server %q (configured: %s)", pos[0], strings.Join(names, ", ")))
	case s.Stdio():
		return usageError(stderr, name, fmt.Sprintf("%q is a stdio server: it takes its credentials from its \"env\", not a sign-in", s.Name))
	case s.Problem != "":
		fmt.Fprintf(stderr, "myelin %s: %s: %s\n", name, s.Name, s.Problem)
		return exitError
	}
	store, err := oauth.DefaultStore()
	if err != nil {
		fmt.Fprintf(stderr, "myelin %s: %v\n", name, err)
		return exitError
	}
	auth := mcpAuth(stderr)
	auth.Store = store
	if old, err := store.Load(s.URL); err == nil && old != nil {
		auth.Scopes = old.Scopes // what it was granted, and asked for since
	}
	if err := store.Remove(s.URL); err != nil {
		fmt.Fprintf(stderr, "myelin %s: %v\n", name, err)
		return exitError
	}
	set := mcp.Start(ctx, []mcp.Server{*s}, mcp.Options{
		Dir: ws.Dir(), MaxReply: int64(f.maxReply) << 20, Version: version(),
		StartTimeout: loginTimeout, Auth: auth,
	})
	defer set.Close()
	st := set.Status()[0]
	if st.Err != "" {
		fmt.Fprintf(stderr, "myelin %s: %s: %s\n", name, s.Name, st.Err)
		return exitError
	}
	kept, _ := store.Load(s.URL)
	switch {
	case kept != nil:
		fmt.Fprintf(stdout, "signed in to %s (%s); its tokens are kept in %s\n", s.Name, s.URL, store.Path(s.URL))
	case s.OAuth != nil && s.OAuth.Grant != "" && s.OAuth.Grant != oauth.GrantAuthorizationCode:
		fmt.Fprintf(stdout, "signed in to %s (%s) with its %s grant; nothing is kept: each run signs in again\n", s.Name, s.URL, s.OAuth.Grant)
	default:
		fmt.Fprintf(stdout, "%s (%s) did not ask to sign in\n", s.Name, s.URL)
	}
	fmt.Fprintf(stdout, "%s offers %d tools\n", s.Name, len(st.Tools))
	return exitOK
}
