package server

import (
	"embed"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
)

// The inspector's page, script and style: static files that hold no data
// (every datum comes from the API, token checked), embedded so that the
// binary serves them with no build step and no network.
//
//go:embed inspector
var inspectorFiles embed.FS

// inspector serves the page at / and its files under /inspector/.
func inspector() http.Handler {
	sub, err := fs.Sub(inspectorFiles, "inspector")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if r.URL.Path == "/" {
			http.ServeFileFS(w, r, sub, "index.html")
			return
		}
		name := strings.TrimPrefix(r.URL.Path, "/inspector/")
		if _, err := fs.Stat(sub, name); name != "" && err != nil {
			// an error in JSON like the API's, not the file server's text
			writeError(w, http.StatusNotFound, fmt.Sprintf("the inspector has no file %s: it is served at /", name))
			return
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path = strings.TrimPrefix(r.URL.Path, "/inspector")
		files.ServeHTTP(w, r2)
	})
}

// isInspectorFile reports whether r asks for one of the inspector's static
// files, which are served without the token (they hold no data; a browser
// cannot send a bearer token when it opens a page).
func isInspectorFile(r *http.Request) bool {
	return r.Method == http.MethodGet && (r.URL.Path == "/" || strings.HasPrefix(r.URL.Path, "/inspector/"))
}
