package providertest

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestTheGoogleCloudFakeRefusesWhatTheGatewayRefuses(t *testing.T) {
	const path = "/v1/projects/p/locations/global/workspaces/wrkspc_1/invoke/v1/messages"
	body := `{"model":"claude-test","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`
	for _, tc := range []struct {
		name, path, body string
		header           map[string]string
		status           int
		says             string
	}{
		{"no token", path, body, nil, 401, "UNAUTHENTICATED"},
		{"an empty token", path, body, map[string]string{"Authorization": "Bearer "}, 401, "UNAUTHENTICATED"},
		{"the first-party path", "/v1/messages", body, map[string]string{"Authorization": "Bearer t"}, 404, "NOT_FOUND"},
		{"Vertex's path", "/v1/projects/p/locations/r/publishers/anthropic/models/m:rawPredict", body, map[string]string{"Authorization": "Bearer t"}, 404, "NOT_FOUND"},
		{"no workspace", "/v1/projects/p/locations/global/workspaces//invoke/v1/messages", body, map[string]string{"Authorization": "Bearer t"}, 404, "NOT_FOUND"},
		{"an API key", path, body, map[string]string{"Authorization": "Bearer t", "x-api-key": "sk-ant"}, 400, "x-api-key"},
		{"a workspace header", path, body, map[string]string{"Authorization": "Bearer t", "anthropic-workspace-id": "wrkspc_1"}, 400, "anthropic-workspace-id"},
		{"no model in the body", path, `{"max_tokens":1,"messages":[]}`, map[string]string{"Authorization": "Bearer t"}, 400, "model: Field required"},
		{"a platform's anthropic_version", path, `{"model":"m","anthropic_version":"vertex-2023-10-16","messages":[]}`, map[string]string{"Authorization": "Bearer t"}, 400, "anthropic_version"},
		{"fine", path, body, map[string]string{"Authorization": "Bearer t"}, 200, `"text":"ok"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := NewGoogleCloud(t, Step{Text: "ok"})
			u, _ := url.Parse(srv.URL)
			req, _ := http.NewRequest(http.MethodPost, u.Scheme+"://"+u.Host+tc.path, strings.NewReader(tc.body))
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || !strings.Contains(string(got), tc.says) {
				t.Fatalf("%d %s, want %d saying %q", resp.StatusCode, got, tc.status, tc.says)
			}
			if n := len(srv.Requests()); (tc.status == 200) != (n == 1) {
				t.Fatalf("%d requests recorded", n)
			}
		})
	}
}

func TestTheGoogleCloudFakesURLIsAGatewayBaseURL(t *testing.T) {
	srv := NewGoogleCloud(t, Step{Text: "ok"})
	if !strings.HasSuffix(srv.URL, GoogleCloudPath) || !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
		t.Fatalf("URL %s", srv.URL)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"v1/messages", strings.NewReader(`{"model":"m","max_tokens":1,"stream":true,"messages":[]}`))
	req.Header.Set("Authorization", "Bearer t")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// past the door, the Anthropic fake: its server-sent events
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" || !strings.Contains(string(got), "event: message_stop") {
		t.Fatalf("%d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), got)
	}
	if p := srv.Paths(); len(p) != 1 || p[0] != GoogleCloudPath+"v1/messages" {
		t.Fatalf("paths %v", p)
	}
}
