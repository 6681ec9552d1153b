package providertest

import (
	"context"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
)

// OneHourWire is a platform's wire of the Anthropic family (Bedrock,
// Vertex AI, Claude on Google Cloud) as OneHourCache tests it. This
// package cannot import provider/anthropic (whose tests import it), so
// the lifetime goes as the string the API takes.
type OneHourWire struct {
	// Serve starts the wire's fake with a script: NewBedrock, NewVertex
	// or NewGoogleCloud.
	Serve func(t testing.TB, steps ...Step) *Server
	// New makes the wire sending to srv, with the cache lifetime ttl (""
	// the default, "1h"), answering whole when noStream; it fails t when
	// it cannot.
	New func(t *testing.T, srv *Server, ttl string, noStream bool) provider.Provider
	// Golden is the file pinning the body the wire sends with the
	// one-hour cache; Update (the package's -update flag) rewrites it.
	Golden string
	Update bool
}

// OneHourCache checks what w does with the one-hour cache, the same on
// every platform: the body it sends is the default's with "ttl":"1h" in
// each cache_control and nothing else changed (the platforms take the
// Messages API's cache_control as it is), pinned in w.Golden; and the
// one-hour writes an answer reports are read into
// history.Usage.CacheWrite1h, streamed and whole.
func OneHourCache(t *testing.T, w OneHourWire) {
	t.Run("TheBodyIsTheDefaultsWithATTLOnEachMarker", func(t *testing.T) {
		srv := w.Serve(t, Step{Text: "ok"}, Step{Text: "ok"})
		for _, ttl := range []string{"", "1h"} {
			if _, err := w.New(t, srv, ttl, false).Complete(context.Background(), SampleRequest(), nil); err != nil {
				t.Fatalf("the request with cache lifetime %q: %v", ttl, err)
			}
		}
		def, got := srv.Requests()[0], srv.Requests()[1]
		Golden(t, w.Golden, got, w.Update)
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
