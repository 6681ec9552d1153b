package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider/providertest"
)

// oneHour is a wire (non-streaming, so that its body is Body(req, false)'s
// but for the lifetime) asking for the one-hour cache.
func oneHour(t *testing.T, ttl CacheTTL) *Provider {
	t.Helper()
	p, err := New(Config{APIKey: "k", NoStream: true, CacheTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The request bytes with the one-hour cache, pinned: every breakpoint (the
// last tool, the system prompt, the two rolling ones) says "ttl":"1h", and
// nothing else differs from the default's bytes.
func TestRequestBytesWithTheOneHourCacheArePinned(t *testing.T) {
	got, err := oneHour(t, CacheTTL1h).Body(providertest.SampleRequest())
	if err != nil {
		t.Fatal(err)
	}
	providertest.Golden(t, "testdata/request_1h.golden.json", got, *update)
	if n := bytes.Count(got, []byte(`"cache_control":{"ttl":"1h","type":"ephemeral"}`)); n != maxBreakpoints {
		t.Errorf("%d breakpoints with the one-hour lifetime, want %d: %s", n, maxBreakpoints, got)
	}
	def := marshal(t, providertest.SampleRequest())
	want := strings.ReplaceAll(string(def), `"cache_control":{"type":"ephemeral"}`, `"cache_control":{"ttl":"1h","type":"ephemeral"}`)
	if string(got) != want {
		t.Fatalf("the one-hour body is not the default's with a ttl on each marker:\n got %s\nwant %s", got, want)
	}
}

// Asking for five minutes sends what the default sends, byte for byte (no
// ttl), and stores nothing either.
func TestTheFiveMinuteCacheSendsTheDefaultsBytes(t *testing.T) {
	p := oneHour(t, CacheTTL5m)
	got, err := p.Body(providertest.SampleRequest())
	if err != nil {
		t.Fatal(err)
	}
	if want := marshal(t, providertest.SampleRequest()); !bytes.Equal(got, want) {
		t.Fatalf("5m body differs from the default's:\n got %s\nwant %s", got, want)
	}
	if p.CacheTTL() != "" {
		t.Errorf("5m is stored as %q, want \"\" (the default)", p.CacheTTL())
	}
	if got := oneHour(t, CacheTTL1h).CacheTTL(); got != "1h" {
		t.Errorf("1h is stored as %q, want \"1h\"", got)
	}
}

// The markers the encoder writes are the SDK's cache_control, which encodes
// the head's (tools, system prompt).
func TestCacheMarksAreTheSDKs(t *testing.T) {
	for _, ttl := range []CacheTTL{"", CacheTTL5m, CacheTTL1h} {
		sdkBytes, err := json.Marshal(ttl.param())
		if err != nil {
			t.Fatal(err)
		}
		if want := `,"cache_control":` + string(sdkBytes); ttl.mark() != want {
			t.Errorf("ttl %q: the encoder marks %s, the SDK %s", ttl, ttl.mark(), want)
		}
	}
}

// A lifetime the API does not take is refused when the wire is made, on
// Anthropic's API and on a platform, with an error naming the value and
// what is taken.
func TestAnUnknownCacheLifetimeIsRefused(t *testing.T) {
	_, err := New(Config{APIKey: "k", CacheTTL: "30m"})
	if err == nil || !strings.Contains(err.Error(), `"30m"`) || !strings.Contains(err.Error(), "5m") || !strings.Contains(err.Error(), "1h") {
		t.Errorf("New with 30m: %v, want an error naming 30m, 5m and 1h", err)
	}
	_, err = NewOn(Platform{Name: "someplatform"}, Config{CacheTTL: "1d"})
	if err == nil || !strings.HasPrefix(err.Error(), "someplatform: ") || !strings.Contains(err.Error(), `"1d"`) {
		t.Errorf("NewOn with 1d: %v, want an error naming the platform and 1d", err)
	}
	for _, s := range []string{"", "5m", "1h"} {
		if _, err := ParseCacheTTL(s); err != nil {
			t.Errorf("ParseCacheTTL(%q): %v", s, err)
		}
	}
	if _, err := ParseCacheTTL("60m"); err == nil {
		t.Error("ParseCacheTTL(60m) took a value the API does not")
	}
}

// The one-hour cache writes an answer reports
// (usage.cache_creation.ephemeral_1h_input_tokens) are read into
// history.Usage.CacheWrite1h, streamed and whole; an answer without the
// breakdown has none.
func TestTheOneHourCacheWritesAreRead(t *testing.T) {
	for _, noStream := range []bool{false, true} {
		srv := providertest.NewAnthropic(t, providertest.Step{Text: "ok", Input: 3, Output: 2, CacheRead: 10, CacheWrite: 9, CacheWrite1h: 5}, providertest.Step{Text: "ok", CacheWrite: 9})
		p, err := New(Config{APIKey: "k", BaseURL: srv.URL, NoStream: noStream, CacheTTL: CacheTTL1h})
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range []history.Usage{{Input: 3, Output: 2, CacheRead: 10, CacheWrite: 9, CacheWrite1h: 5}, {CacheWrite: 9}} {
			resp, err := p.Complete(context.Background(), providertest.SampleRequest(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if u := resp.Message.Usage; u == nil || *u != want {
				t.Errorf("noStream %v, answer %d: usage %+v, want %+v", noStream, i, u, want)
			}
		}
	}
}
