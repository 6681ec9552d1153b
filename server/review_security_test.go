package server

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/myelin-run/myelin/tool"
)

// send sends a request with the given Host and headers, and returns the
// status and body.
func (f *fixture) send(method, path, host, body string, header ...string) (int, string) {
	f.t.Helper()
	req, err := http.NewRequest(method, f.http.URL+path, strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// countingTool adds a tool that counts its calls.
func (f *fixture) countingTool() *atomic.Int32 {
	var n atomic.Int32
	if err := f.srv.Agent.Tools.Add(tool.MustFunc("count--run", "Counts.", func(context.Context, struct{}) (any, error) { n.Add(1); return "counted", nil })); err != nil {
		f.t.Fatal(err)
	}
	return &n
}

// A web page on another site cannot call a tool (or start a turn) on a
// server without a token by a "simple" cross-site POST, which a browser
// sends without asking first: CORS is off, so a request from another
// origin is refused before it does anything.
func TestACrossSiteRequestCannotCallATool(t *testing.T) {
	f := newFixture(t)
	calls := f.countingTool()
	for _, h := range [][]string{
		{"Origin", "http://evil.example", "Content-Type", "text/plain"},
		{"Origin", "null", "Content-Type", "text/plain"},
		{"Sec-Fetch-Site", "cross-site", "Content-Type", "text/plain"},
	} {
		status, body := f.send("POST", "/v1/tools/count--run/call", "", `{}`, h...)
		if status != http.StatusForbidden || !strings.Contains(body, `"message"`) {
			t.Errorf("%v: %d %s", h, status, body)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("the tool was called %d times from another site", n)
	}
	// the inspector's own requests (same origin) and clients that send no
	// Origin (curl, Go) pass
	for _, h := range [][]string{
		{"Origin", strings.TrimSuffix(f.http.URL, "/"), "Sec-Fetch-Site", "same-origin"},
		nil,
	} {
		if status, body := f.send("POST", "/v1/tools/count--run/call", "", `{}`, h...); status != 200 {
			t.Errorf("%v: %d %s", h, status, body)
		}
	}
}

// DNS rebinding: a page of evil.example whose name is made to resolve to
// 127.0.0.1 is same-origin with itself, so Origin checks pass; what tells it
// is the Host. A server without a token answers only requests for a
// loopback host.
func TestAServerWithoutATokenAnswersOnlyALoopbackHost(t *testing.T) {
	f := newFixture(t)
	calls := f.countingTool()
	port := f.http.URL[strings.LastIndex(f.http.URL, ":"):]
	for _, host := range []string{"evil.example" + port, "evil.example", "127.0.0.1.evil.example" + port} {
		status, body := f.send("POST", "/v1/tools/count--run/call", host, `{}`, "Origin", "http://"+host)
		if status != http.StatusForbidden || !strings.Contains(body, "host") {
			t.Errorf("Host %s: %d %s", host, status, body)
		}
		if status, _ := f.send("GET", "/v1/conversations", host, ``); status != http.StatusForbidden {
			t.Errorf("GET with Host %s: %d", host, status)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("the tool was called %d times", n)
	}
	for _, host := range []string{"127.0.0.1" + port, "localhost" + port, "[::1]" + port, "localhost"} {
		if status, body := f.send("GET", "/v1/conversations", host, ``); status != 200 {
			t.Errorf("Host %s: %d %s", host, status, body)
		}
	}
	// with a token, any host (a server off the loopback interface has one)
	f.srv.Token = goodToken
	if status, body := f.send("GET", "/v1/conversations", "myelin.example"+port, ``, "Authorization", "Bearer "+goodToken); status != 200 {
		t.Errorf("with the token: %d %s", status, body)
	}
}

// Every route of the API, and the OpenAPI document, asks for the token;
// only the inspector's static files do not.
func TestEveryRouteAsksForTheToken(t *testing.T) {
	f := newFixture(t)
	calls := f.countingTool()
	id := f.newConversation()
	f.srv.Token = goodToken
	r := strings.NewReplacer("{id}", id, "{tid}", "turn_x", "{n}", "1", "{name}", "count--run", "{path...}", ".myelin/tool-results/x")
	paths := []string{"GET /openapi.json"}
	for _, rt := range f.srv.routes() {
		paths = append(paths, rt.method+" "+r.Replace(rt.path))
	}
	for _, p := range paths {
		method, path, _ := strings.Cut(p, " ")
		status, body := f.send(method, path, "", `{"prompt":"x"}`)
		if status != http.StatusUnauthorized {
			t.Errorf("%s without the token: %d %.200s", p, status, body)
		}
	}
	for _, path := range []string{"/", "/inspector/app.js", "/inspector/style.css"} {
		if status, _ := f.send("GET", path, "", ""); status != 200 {
			t.Errorf("%s without the token: %d", path, status)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("the tool was called %d times without the token", n)
	}
}
