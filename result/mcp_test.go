package result

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func fromMCP(t *testing.T, raw string) Result {
	t.Helper()
	r, err := FromMCP([]byte(raw))
	if err != nil {
		t.Fatalf("FromMCP: %v", err)
	}
	return r
}

func TestMCPTextOnlyContentIsOneString(t *testing.T) {
	out := one(t, fromMCP(t, `{"content":[{"type":"text","text":"a \"quoted\"\n\tline"},{"type":"text","text":"b"}]}`), nil)
	if want := "a \"quoted\"\n\tline\nb"; out.Text != want || out.IsError {
		t.Fatalf("text = %q, want %q", out.Text, want)
	}
}

func TestMCPEveryBlockType(t *testing.T) {
	raw, err := os.ReadFile("testdata/mcp_all_blocks.json")
	if err != nil {
		t.Fatal(err)
	}
	store := &memStore{}
	out := one(t, fromMCP(t, string(raw)), store)
	want := strings.Join([]string{
		"first",
		"[image: image/png, 8 bytes]",
		"[audio: audio/wav, 8 bytes, saved to workspace file .myelin/tool-results/2026-12-03-call_1-1.wav]",
		"[resource file:///notes.md, text/markdown]\n# Notes\nbody",
		"[resource file:///a.pdf: application/pdf, 8 bytes, saved to workspace file .myelin/tool-results/2026-12-03-call_1-2.pdf]",
		`[resource link "big.csv": file:///big.csv; not fetched]`,
		`{"type":"hologram","frames":3,"z":{"b":1}}`,
	}, "\n")
	if out.Text != want {
		t.Fatalf("text =\n%s\nwant\n%s", out.Text, want)
	}
	if len(out.Images) != 1 || out.Images[0].MIMEType != "image/png" || string(out.Images[0].Data) != "\x89PNG\r\n\x1a\n" {
		t.Fatalf("images = %+v", out.Images)
	}
	if strings.Contains(out.Text, "iVBOR") {
		t.Fatal("image bytes reached the text as base64")
	}
	if store.files[".myelin/tool-results/2026-12-03-call_1-1.wav"] != "RIFF\x00\x00\x00\x00" || store.files[".myelin/tool-results/2026-12-03-call_1-2.pdf"] != "%PDF-1.4" {
		t.Fatalf("saved files = %q", store.files)
	}
	if string(out.Structured) != `{"count":7}` {
		t.Fatalf("structured = %s", out.Structured)
	}
}

func TestMCPStructuredContentIsReadOnlyWithoutTextOfItsOwn(t *testing.T) {
	out := one(t, fromMCP(t, `{"content":[],"structuredContent":{"b":2,"a":[1]}}`), nil)
	if out.Text != `{"b":2,"a":[1]}` || string(out.Structured) != `{"b":2,"a":[1]}` {
		t.Fatalf("got %+v", out)
	}
	out = one(t, fromMCP(t, `{"content":[{"type":"text","text":"summary"}],"structuredContent":{"a":1}}`), nil)
	if out.Text != "summary" || string(out.Structured) != `{"a":1}` {
		t.Fatalf("got %+v", out)
	}
}

// contract §4: what myelin writes itself (placeholders, stubs, link lines) is
// not the server's text, so the structured JSON follows it.
func TestMCPStructuredContentFollowsWhenTheServerWroteNoTextOfItsOwn(t *testing.T) {
	const sc = `"structuredContent":{"n":1}`
	png := `{"type":"image","mimeType":"image/png","data":"iVBORw0KGgo="}`
	for _, tc := range []struct{ name, content, want string }{
		{"one empty text block", `[{"type":"text","text":""}]`, `{"n":1}`},
		{"only a resource link", `[{"type":"resource_link","uri":"file:///a","name":"a"}]`, "[resource link \"a\": file:///a; not fetched]\n{\"n\":1}"},
		{"only an image", `[` + png + `]`, "[image: image/png, 8 bytes]\n{\"n\":1}"},
		{"an empty text block and an image", `[{"type":"text","text":""},` + png + `]`, "\n[image: image/png, 8 bytes]\n{\"n\":1}"},
		{"text of its own and an image", `[{"type":"text","text":"see"},` + png + `]`, "see\n[image: image/png, 8 bytes]"},
		{"an embedded text resource", `[{"type":"resource","resource":{"uri":"file:///r","mimeType":"text/plain","text":""}}]`, "[resource file:///r, text/plain]\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := one(t, fromMCP(t, `{"content":`+tc.content+`,`+sc+`}`), &memStore{})
			if out.Text != tc.want || string(out.Structured) != `{"n":1}` {
				t.Fatalf("text = %q, want %q", out.Text, tc.want)
			}
		})
	}
}

func TestMCPStructuredContentIsKeptByPresence(t *testing.T) {
	if out := one(t, fromMCP(t, `{"content":[{"type":"text","text":"x"}]}`), nil); out.Structured != nil {
		t.Fatalf("structured = %s, want none", out.Structured)
	}
	if out := one(t, fromMCP(t, `{"content":[{"type":"text","text":"x"}],"structuredContent":{}}`), nil); string(out.Structured) != "{}" {
		t.Fatalf("structured = %s, want {}", out.Structured)
	}
}

func TestMCPIsErrorIsAnErrorWithTheContentText(t *testing.T) {
	out := one(t, fromMCP(t, `{"content":[{"type":"text","text":"no such table: users"}],"isError":true}`), nil)
	if !out.IsError || out.Text != "no such table: users" {
		t.Fatalf("got %+v", out)
	}
}

func TestMCPStubFieldsAreBounded(t *testing.T) {
	long := strings.Repeat("u", 5000)
	out := one(t, fromMCP(t, `{"content":[{"type":"resource_link","uri":"`+long+`","name":"`+long+"\\n"+`"}]}`), nil)
	if len(out.Text) > 500 || !strings.Contains(out.Text, "…") || strings.Contains(out.Text, "\n") {
		t.Fatalf("text (%d bytes) = %.300q", len(out.Text), out.Text)
	}
}

func TestMCPInvalidBase64IsAnErrorNamingTheBlock(t *testing.T) {
	out := one(t, fromMCP(t, `{"content":[{"type":"text","text":"ok"},{"type":"image","data":"%%%","mimeType":"image/png"}]}`), nil)
	if !out.IsError || !strings.Contains(out.Text, "content block 2") || !strings.Contains(out.Text, "image (image/png) data is not valid base64") {
		t.Fatalf("got %+v", out)
	}
}

func TestMCPPayloadThatCannotBeSavedMakesAnErrorSayingWhich(t *testing.T) {
	out := one(t, fromMCP(t, `{"content":[{"type":"text","text":"see audio"},{"type":"audio","data":"AAAA","mimeType":"audio/wav"}]}`), failStore{})
	if !out.IsError || !strings.Contains(out.Text, "audio (audio/wav, 3 bytes) could not be saved to the workspace: disk full") || !strings.Contains(out.Text, "see audio") {
		t.Fatalf("got %+v", out)
	}
}

func TestMCPTextKeepsRawBytesForTheConversion(t *testing.T) {
	// CESU-8 bytes raw in the JSON, an escaped pair and a lone escape.
	raw := "{\"content\":[{\"type\":\"text\",\"text\":\"a\xed\xa0\xbd\xed\xb8\x80 \\ud83d\\ude00 \\ud800 \\u00e9\\\"\"}]}"
	out := one(t, fromMCP(t, raw), nil)
	if want := "a😀 😀 \uFFFD é\""; out.Text != want {
		t.Fatalf("text = %q, want %q", out.Text, want)
	}
}

func TestMCPEscapedNULMakesTextBinary(t *testing.T) {
	store := &memStore{}
	out := one(t, fromMCP(t, `{"content":[{"type":"text","text":"a\u0000b"}]}`), store)
	if !strings.HasPrefix(out.Text, "[binary: application/octet-stream, 3 bytes, saved to workspace file") {
		t.Fatalf("text = %q", out.Text)
	}
}

func TestMCPNotAResultIsAnError(t *testing.T) {
	for _, raw := range []string{`[1,2]`, `not json`, `{"content":"text"}`} {
		if _, err := FromMCP([]byte(raw)); err == nil {
			t.Errorf("FromMCP(%s) succeeded", raw)
		}
	}
}

func TestUnknownBlockIsCompactJSON(t *testing.T) {
	out := one(t, Result{Data: []Block{UnknownBlock{Raw: json.RawMessage(`{ "type" : "x" }`)}}}, nil)
	if out.Text != `{"type":"x"}` {
		t.Fatalf("text = %q", out.Text)
	}
}

// A server that echoes its content in structuredContent (the reference
// filesystem server does) must not bring the bytes into the text as base64
// when the structured JSON follows myelin's stubs: there, each payload's
// base64 stands as its stub. Programs get the structured content whole.
func TestStructuredContentEchoingAPayloadReadsItsStubNotItsBase64(t *testing.T) {
	wav := "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA="
	png := "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/PchI7wAAAABJRU5ErkJggg=="
	content := `[{"type":"audio","data":"` + wav + `","mimeType":"audio/wav"},{"type":"image","data":"` + png + `","mimeType":"image/png"}]`
	out := one(t, fromMCP(t, `{"content":`+content+`,"structuredContent":{"content":`+content+`}}`), &memStore{})
	if strings.Contains(out.Text, wav) || strings.Contains(out.Text, png) {
		t.Fatalf("base64 reached the text: %q", out.Text)
	}
	stub := "[audio: audio/wav, 44 bytes, saved to workspace file .myelin/tool-results/"
	if strings.Count(out.Text, stub) != 2 || strings.Count(out.Text, "[image: image/png, 70 bytes]") != 2 {
		t.Fatalf("the stubs do not stand for the base64: %q", out.Text)
	}
	if !strings.Contains(string(out.Structured), wav) || !strings.Contains(string(out.Structured), png) {
		t.Fatalf("programs lost the structured content: %s", out.Structured)
	}
}
