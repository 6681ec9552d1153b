package httpguard

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net"
	"os"
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
	hs := Server((&Guard{Token: "0123456789abcdef"}).Wrap(served))
	go hs.Serve(ln)
	defer hs.Close()
	for _, c := range []struct{ name, send string }{
		{"half its headers", "POST / HTTP/1.1\r\nHost: localhost\r\n"},
		{"a whole request, then nothing", "GET / HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer 0123456789abcdef\r\n\r\n"},
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
// leave a connection that never sends its headers open for good. (Test
// support packages, named *test, serve only tests.)
func TestEveryHTTPServerOfMyelinIsThisPackages(t *testing.T) {
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() && strings.HasSuffix(d.Name(), "test") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || filepath.Dir(path) == "." || path == filepath.Join(root, "internal", "httpguard", "server.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, src, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			if sel, ok := lit.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Server" {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "http" {
					t.Errorf("%s builds an http.Server of its own: use httpguard.Server", path)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
