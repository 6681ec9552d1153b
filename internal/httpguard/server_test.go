package httpguard

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A client that never finishes its request's headers — no token needed,
// as the guard runs only once they are read — is cut off, as is a
// kept-alive connection that sends nothing more.
func TestAServersConnectionThatSendsNoWholeRequestIsClosed(t *testing.T) {
	readHeaderTimeout, idleTimeout = 200*time.Millisecond, 300*time.Millisecond
	defer func() { readHeaderTimeout, idleTimeout = 10*time.Second, 2*time.Minute }()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &Guard{Token: "0123456789abcdef", Open: func(r *http.Request) bool { return r.URL.Path == "/page" }}
	hs := Server(g.Wrap(served))
	go hs.Serve(ln)
	defer hs.Close()
	for _, c := range []struct{ name, send string }{
		{"half its headers", "POST / HTTP/1.1\r\nHost: localhost\r\n"},
		{"a whole request, then nothing", "GET / HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer 0123456789abcdef\r\n\r\n"},
		// refused, or served by an open route that reads no body: net/http
		// would read the body it was told of before answering (the
		// review found such a client held its connection for good)
		{"no token, a body announced and never sent", "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1000\r\n\r\n"},
		{"no token, a chunked body never sent", "POST / HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n"},
		{"an open route, a body announced and never sent", "GET /page HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1000\r\n\r\n"},
		{"a foreign origin, a body announced and never sent", "POST / HTTP/1.1\r\nHost: localhost\r\nOrigin: http://a.example\r\nContent-Length: 1000\r\n\r\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := conn.Write([]byte(c.send)); err != nil {
				t.Fatal(err)
			}
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			buf := make([]byte, 4096)
			for {
				_, err := conn.Read(buf)
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					t.Fatal("the connection was still open after 10 s")
				}
				if err != nil {
					return // closed by the server
				}
			}
		})
	}
}

// Every http.Server of myelin is Server's: one built anywhere else would
// leave a connection that never sends its headers open for good. It
// looks for every way to serve HTTP without it — an http.Server literal,
// new or declared, http.Serve and http.ListenAndServe (and their TLS
// forms), httptest's servers — in every non-test file of the module, the
// import of net/http by any name. (Test support packages, named *test,
// serve only tests.)
func TestEveryHTTPServerOfMyelinIsThisPackages(t *testing.T) {
	root := filepath.Join("..", "..")
	own := filepath.Join(root, "internal", "httpguard", "server.go")
	found := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasSuffix(d.Name(), "test")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		for _, what := range servesHTTP(f) {
			if path == own && what == "an http.Server literal" {
				found++
				continue
			}
			t.Errorf("%s serves HTTP without httpguard.Server: %s", path, what)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found != 1 {
		t.Fatalf("found %d http.Server literals in %s, want its one: does the search still see them?", found, own)
	}
}

// servesHTTP names each way f serves HTTP by itself.
func servesHTTP(f *ast.File) []string {
	names := map[string]string{} // local name of an import -> its path
	for _, im := range f.Imports {
		p := strings.Trim(im.Path.Value, `"`)
		name := p[strings.LastIndex(p, "/")+1:]
		if im.Name != nil {
			name = im.Name.Name
		}
		names[name] = p
	}
	is := func(e ast.Expr, pkg, sym string) bool {
		sel, ok := e.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != sym {
			return false
		}
		x, ok := sel.X.(*ast.Ident)
		return ok && names[x.Name] == pkg
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CompositeLit:
			if is(n.Type, "net/http", "Server") {
				out = append(out, "an http.Server literal")
			}
		case *ast.ValueSpec:
			if n.Type != nil && is(n.Type, "net/http", "Server") {
				out = append(out, "a declared http.Server")
			}
		case *ast.CallExpr:
			if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "new" && len(n.Args) == 1 && is(n.Args[0], "net/http", "Server") {
				out = append(out, "new(http.Server)")
			}
			for _, fn := range []string{"Serve", "ServeTLS", "ListenAndServe", "ListenAndServeTLS"} {
				if is(n.Fun, "net/http", fn) {
					out = append(out, "http."+fn)
				}
			}
			for _, fn := range []string{"NewServer", "NewUnstartedServer", "NewTLSServer"} {
				if is(n.Fun, "net/http/httptest", fn) {
					out = append(out, "httptest."+fn)
				}
			}
		}
		return true
	})
	return out
}
