package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/history/sqlite"
	"github.com/myelin-run/myelin/internal/skipped"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
)

// The MCP reference servers, installed by .ci/run (npm ci in
// testdata/npm) at the versions package.json pins.
func referenceServers(t *testing.T) []Server {
	t.Helper()
	modules, err := filepath.Abs("testdata/npm/node_modules/@modelcontextprotocol")
	if err != nil {
		t.Fatal(err)
	}
	everything := filepath.Join(modules, "server-everything", "dist", "index.js")
	filesystem := filepath.Join(modules, "server-filesystem", "dist", "index.js")
	_, errNode := exec.LookPath("node")
	_, errE := os.Stat(everything)
	_, errF := os.Stat(filesystem)
	if err := firstErr(errNode, errE, errF); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the MCP reference servers are missing under CI (.ci/run installs them: npm ci in mcp/testdata/npm): %v", err)
		}
		skipped.Need(t, "the MCP reference servers", "(cd mcp/testdata/npm && npm ci)")
	}
	return []Server{
		{Name: "everything", Type: "stdio", Command: "node", Args: []string{everything, "stdio"}},
		{Name: "fs", Type: "stdio", Command: "node", Args: []string{filesystem, "."}},
	}
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// wav is a valid, silent WAV file.
var wav = []byte("RIFF$\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00\x40\x1f\x00\x00\x80\x3e\x00\x00\x02\x00\x10\x00data\x00\x00\x00\x00")

func TestReferenceServersResultsReadAsSPEC4Says(t *testing.T) {
	h := start(t, referenceServers(t), Options{})
	if f := h.set.Failures(); f != nil {
		t.Fatal(f)
	}
	t.Run("echo is its text verbatim", func(t *testing.T) {
		msg := "a \"quoted\"\n\ttab and ünïcode <&>"
		in, _ := json.Marshal(map[string]string{"message": msg})
		if out := h.call("everything--echo", string(in)); out.IsError || out.Text != "Echo: "+msg {
			t.Errorf("got %q", out.Text)
		}
	})
	t.Run("the workspace is the client's one root", func(t *testing.T) {
		out := h.call("everything--get-roots-list", `{}`)
		if !strings.Contains(out.Text, "1. workspace\n   URI: file://"+h.ws.Dir()+"\n") {
			t.Errorf("got %q", out.Text)
		}
	})
	t.Run("input is checked against the server's schema first", func(t *testing.T) {
		out := h.call("everything--get-sum", `{"a":"x","b":1}`)
		if !out.IsError || !strings.Contains(out.Text, `want "number"`) {
			t.Errorf("got %q (error %v)", out.Text, out.IsError)
		}
	})
	t.Run("get-tiny-image is a native image and a placeholder", func(t *testing.T) {
		out := h.call("everything--get-tiny-image", `{}`)
		if len(out.Images) != 1 || !strings.HasPrefix(string(out.Images[0].Data), "\x89PNG") {
			t.Fatalf("images %d, text %q", len(out.Images), out.Text)
		}
		if !regexp.MustCompile(`\[image: image/png, \d+ bytes\]`).MatchString(out.Text) || strings.Contains(out.Text, "iVBOR") {
			t.Errorf("text %q", out.Text)
		}
	})
	t.Run("get-resource-links are links, not fetched", func(t *testing.T) {
		out := h.call("everything--get-resource-links", `{"count":3}`)
		links := regexp.MustCompile(`\[resource link "[^"]+": demo://resource/\S+; not fetched\]`).FindAllString(out.Text, -1)
		if len(links) != 3 {
			t.Errorf("%d links in %q", len(links), out.Text)
		}
	})
	t.Run("get-resource-reference embeds text, or saves a blob", func(t *testing.T) {
		out := h.call("everything--get-resource-reference", `{"resourceType":"Text","resourceId":1}`)
		if !strings.Contains(out.Text, "[resource demo://resource/dynamic/text/1, text/plain]\nResource 1: ") {
			t.Errorf("text resource: %q", out.Text)
		}
		out = h.call("everything--get-resource-reference", `{"resourceType":"Blob","resourceId":2}`)
		if len(out.Files) != 1 || !strings.Contains(out.Text, "saved to workspace file "+out.Files[0]+"]") {
			t.Fatalf("blob resource: %q, files %v", out.Text, out.Files)
		}
		if data := h.file(out.Files[0]); !strings.Contains(string(data), "Resource 2") {
			t.Errorf("saved blob holds %q", data)
		}
	})
	t.Run("get-structured-content is JSON decoded once", func(t *testing.T) {
		out := h.call("everything--get-structured-content", `{"location":"New York"}`)
		var v map[string]any
		if err := json.Unmarshal([]byte(out.Text), &v); err != nil || v["temperature"] == nil {
			t.Errorf("one parse of the text gives %v (%v): %q", v, err, out.Text)
		}
		var s map[string]any
		if err := json.Unmarshal(out.Structured, &s); err != nil || s["temperature"] != v["temperature"] {
			t.Errorf("structured %s", out.Structured)
		}
	})
	t.Run("read_media_file on a wav saves the audio with a stub", func(t *testing.T) {
		if err := os.WriteFile(filepath.Join(h.ws.Dir(), "tone.wav"), wav, 0o644); err != nil {
			t.Fatal(err)
		}
		out := h.call("fs--read_media_file", `{"path":"tone.wav"}`)
		// the server echoes its content in structuredContent: the model
		// reads it after the stub (contract §4), the audio's base64 in it
		// standing as the stub
		if len(out.Files) != 1 {
			t.Fatalf("text %q, files %v", out.Text, out.Files)
		}
		stub := "[audio: audio/wav, 44 bytes, saved to workspace file " + out.Files[0] + "]"
		if out.Text != stub+"\n"+`{"content":[{"type":"audio","data":"`+stub+`","mimeType":"audio/wav"}]}` {
			t.Fatalf("text %q, files %v", out.Text, out.Files)
		}
		if got := h.file(out.Files[0]); string(got) != string(wav) {
			t.Errorf("saved audio %q", got)
		}
	})
}

// What the model gets: one round calling the reference servers, over the
// Anthropic wire into a durable history.
func TestReferenceServersReachTheModelAsSPEC4Says(t *testing.T) {
	h := start(t, referenceServers(t), Options{})
	if err := os.WriteFile(filepath.Join(h.ws.Dir(), "tone.wav"), wav, 0o644); err != nil {
		t.Fatal(err)
	}
	srv := providertest.NewAnthropic(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{
			{ID: "c_img", Name: "everything--get-tiny-image", Input: `{}`},
			{ID: "c_wav", Name: "fs--read_media_file", Input: `{"path":"tone.wav"}`},
			{ID: "c_echo", Name: "everything--echo", Input: `{"message":"x"}`},
		}},
		providertest.Step{Text: "done"})
	prov, err := anthropic.New(anthropic.Config{APIKey: "k", BaseURL: srv.URL, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	store, err := sqlite.Open(filepath.Join(h.ws.Dir(), ".myelin", "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	reg := &tool.Registry{}
	if err := reg.Add(h.set.Tools()...); err != nil {
		t.Fatal(err)
	}
	a := &agent.Agent{Provider: prov, Store: store, Tools: reg, Model: "m", Env: result.Env{Store: h.ws}}
	ctx := context.Background()
	id, err := a.NewConversation(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Turn(ctx, id, "go", nil); err != nil {
		t.Fatal(err)
	}
	wire, _ := json.Marshal(srv.Request(1)["messages"])
	b64 := base64.StdEncoding.EncodeToString(wav)
	if strings.Contains(string(wire), b64) {
		t.Errorf("the audio's base64 (its structured content) reached the model: %s", wire)
	}
	if !strings.Contains(string(wire), `"media_type":"image/png"`) || !strings.Contains(string(wire), `"text":"Echo: x"`) && !strings.Contains(string(wire), `"content":"Echo: x"`) {
		t.Errorf("the request lacks the native image or the echo: %s", wire)
	}
	msgs, err := store.Messages(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	// The stored text is the placeholder; the image's bytes are kept beside
	// it (Part.Images) only to send it natively again after a restart
	// (docs/agent.md). The audio is nowhere but in its file.
	img := msgs[2].Parts[0]
	if strings.Contains(img.Text, "iVBOR") || !strings.Contains(img.Text, "[image: image/png, ") || len(img.Images) != 1 {
		t.Errorf("stored image result: text %q with %d images", img.Text, len(img.Images))
	}
	if stored, _ := json.Marshal(msgs); strings.Contains(string(stored), b64) {
		t.Errorf("history holds the audio's base64: %s", stored)
	}
}
