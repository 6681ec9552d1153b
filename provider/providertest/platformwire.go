package providertest

import (
	"context"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
)

// This file holds the checks every platform's wire of the Anthropic family
// (Bedrock, Vertex AI, Claude on Google Cloud) passes alike, written once:
// each platform's tests give their PlatformWire and keep to themselves
// only what is the platform's own (its address, its signing, its errors).

// PlatformWire is a platform's wire of the Anthropic family as
// PlatformAnswers and OneHourCache test it. This package cannot import
// provider/anthropic (whose tests import it), so the cache lifetime goes
// as the string the API takes.
type PlatformWire struct {
	// Name is the wire's name, which its errors and its CacheSettings
	// start with ("bedrock").
	Name string
	// Serve starts the wire's fake with a script: NewBedrock, NewVertex
	// or NewGoogleCloud.
	Serve func(t testing.TB, steps ...Step) *Server
	// New makes the wire sending to srv, with the cache lifetime ttl (""
	// the default, "1h"), answering whole when noStream; it fails t when
	// it cannot.
	New func(t *testing.T, srv *Server, ttl string, noStream bool) provider.Provider
}

// PlatformAnswers checks what w reads and marks as the Anthropic API's
// wire does: an answer's text, tool calls, usage and stop reason, streamed
// and whole; the four cache markers in the body and the CacheSettings
// that name them; a stream cut midway an error; the fake's window refusal
// a provider.TooLongError.
func PlatformAnswers(t *testing.T, w PlatformWire) {
	t.Run("TextToolCallsAndUsageAreReadFromBothAnswers", func(t *testing.T) {
		for _, noStream := range []bool{false, true} {
			srv := w.Serve(t, Step{
				Text:      "Let me look — ok.",
				ToolCalls: []ToolCall{{ID: "toolu_9", Name: "workspace--read", Input: `{"path": "a.txt"}`}},
				Input:     12, Output: 34, CacheRead: 56, CacheWrite: 78,
			})
			var streamed strings.Builder
			resp, err := w.New(t, srv, "", noStream).Complete(context.Background(), SampleRequest(), func(s string) { streamed.WriteString(s) })
			if err != nil {
				t.Fatalf("noStream %v: %v", noStream, err)
			}
			m := resp.Message
			if streamed.String() != "Let me look — ok." || len(m.Parts) != 2 || m.Parts[0].Text != "Let me look — ok." || m.Parts[1].CallID != "toolu_9" {
				t.Fatalf("noStream %v: streamed %q, message %+v", noStream, streamed.String(), m)
			}
			if m.Usage == nil || *m.Usage != (history.Usage{Input: 12, Output: 34, CacheRead: 56, CacheWrite: 78}) || resp.StopReason != "tool_use" {
				t.Fatalf("noStream %v: usage %+v stop %q", noStream, m.Usage, resp.StopReason)
			}
		}
	})
	t.Run("TheCacheMarkersReachThePlatform", func(t *testing.T) {
		srv := w.Serve(t, Step{Text: "ok"})
		p := w.New(t, srv, "", false)
		if _, err := p.Complete(context.Background(), SampleRequest(), nil); err != nil {
			t.Fatal(err)
		}
		body := string(srv.Requests()[0])
		// the last tool, the system prompt, the two newest user messages
		if n := strings.Count(body, `"cache_control":{"type":"ephemeral"}`); n != 4 {
			t.Fatalf("%d cache markers in %s, want 4", n, body)
		}
		if got, want := provider.CacheSettings(p), w.Name+": anthropic: cache_control ephemeral"; !strings.HasPrefix(got, want) {
			t.Fatalf("cache settings %q, want them to start %q", got, want)
		}
	})
	t.Run("AStreamCutMidwayIsAnError", func(t *testing.T) {
		srv := w.Serve(t, Step{Text: "hello there", CutAfter: 3})
		if _, err := w.New(t, srv, "", false).Complete(context.Background(), SampleRequest(), nil); err == nil {
			t.Fatal("a stream cut after 3 bytes gave no error")
		}
	})
	t.Run("TheFakesWindowRefusalIsTooLong", func(t *testing.T) {
		srv := w.Serve(t)
		srv.Window = 100
		_, err := w.New(t, srv, "", false).Complete(context.Background(), SampleRequest(), nil)
		if tl, ok := provider.IsTooLong(err); !ok || tl.Limit != 100 || tl.Tokens == 0 {
			t.Fatalf("err = %v, want a too-long error with the limit 100 and the request's tokens", err)
		}
	})
}

// OneHourCache checks what w does with the one-hour cache, the same on
// every platform: the body it sends is the default's with "ttl":"1h" in
// each cache_control and nothing else changed (the platforms take the
// Messages API's cache_control as it is), pinned in the file golden
// (rewritten when update, the package's -update flag); and the one-hour
// writes an answer reports are read into history.Usage.CacheWrite1h,
// streamed and whole.
func OneHourCache(t *testing.T, w PlatformWire, golden string, update bool) {
	t.Run("TheBodyIsTheDefaultsWithATTLOnEachMarker", func(t *testing.T) {
		srv := w.Serve(t, Step{Text: "ok"}, Step{Text: "ok"})
		for _, ttl := range []string{"", "1h"} {
			if _, err := w.New(t, srv, ttl, false).Complete(context.Background(), SampleRequest(), nil); err != nil {
				t.Fatalf("the request with cache lifetime %q: %v", ttl, err)
			}
		}
		def, got := srv.Requests()[0], srv.Requests()[1]
		Golden(t, golden, got, update)
		want := strings.ReplaceAll(string(def), `"cache_control":{"type":"ephemeral"}`, `"cache_control":{"ttl":"1h","type":"ephemeral"}`)
		if string(got) != want || want == string(def) {
			t.Fatalf("the one-hour body is not the default's with a ttl on each marker:\n got %s\nwant %s", got, want)
		}
	})
	t.Run("TheOneHourWritesAreReadStreamedAndWhole", func(t *testing.T) {
		for _, noStream := range []bool{false, true} {
			srv := w.Serve(t, Step{Text: "ok", Input: 3, Output: 2, CacheRead: 10, CacheWrite: 9, CacheWrite1h: 5})
			resp, err := w.New(t, srv, "1h", noStream).Complete(context.Background(), SampleRequest(), nil)
			if err != nil {
				t.Fatalf("noStream %v: %v", noStream, err)
			}
			want := history.Usage{Input: 3, Output: 2, CacheRead: 10, CacheWrite: 9, CacheWrite1h: 5}
			if u := resp.Message.Usage; u == nil || *u != want {
				t.Errorf("noStream %v: usage %+v, want %+v", noStream, u, want)
			}
		}
	})
}
