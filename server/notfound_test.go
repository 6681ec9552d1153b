package server

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Every error is JSON, outside /v1 too: an unknown path, a method a page
// does not take, a file the inspector does not have. The inspector's own
// files are still served as themselves.
func TestEveryErrorOutsideV1IsJSON(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		method, path string
		status       int
		says, allow  string
	}{
		{"GET", "/nothing", 404, "no page GET /nothing", ""},
		{"GET", "/v1", 404, "no endpoint GET /v1", ""},
		{"GET", "/favicon.ico", 404, "no page GET /favicon.ico", ""},
		{"GET", "/inspector/nope.js", 404, "the inspector has no file nope.js", ""},
		{"POST", "/", 405, "POST is not a method of /; it takes GET", "GET"},
		{"POST", "/openapi.json", 405, "POST is not a method of /openapi.json; it takes GET", "GET"},
		{"DELETE", "/inspector/app.js", 405, "DELETE is not a method of /inspector/app.js; it takes GET", "GET"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, f.http.URL+tc.path, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			var e apiError
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatalf("the answer is not JSON (%v): %d %s", err, resp.StatusCode, body)
			}
			if resp.StatusCode != tc.status || e.Error.Status != tc.status || !strings.Contains(e.Error.Message, tc.says) {
				t.Fatalf("status %d (%d in the body), want %d saying %q: %s", resp.StatusCode, e.Error.Status, tc.status, tc.says, body)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Fatalf("Content-Type %q, want application/json", ct)
			}
			if got := resp.Header.Get("Allow"); got != tc.allow {
				t.Fatalf("Allow %q, want %q", got, tc.allow)
			}
		})
	}
	// the pages themselves
	for path, ct := range map[string]string{"/": "text/html", "/inspector/app.js": "text/javascript", "/inspector/style.css": "text/css", "/openapi.json": "application/json"} {
		resp, err := http.Get(f.http.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), ct) {
			t.Fatalf("GET %s: %d %s, want 200 %s", path, resp.StatusCode, resp.Header.Get("Content-Type"), ct)
		}
	}
}
