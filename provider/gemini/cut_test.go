package gemini

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
)

// A stream that ends cleanly before a finishReason is a cut
// (provider.ErrStreamCut): transient, so the agent may send it again.
func TestAStreamEndedCleanlyBeforeItsFinishReasonIsACut(t *testing.T) {
	full := providertest.GeminiStream(providertest.Step{Text: "hi"}, "")
	chunks := strings.SplitAfter(full, "\n\n")
	for name, raw := range map[string]string{
		"nothing but an empty chunk": `data: {"candidates":[{"content":{"parts":[],"role":"model"},"index":0}]}` + "\n\n",
		"text, then closed":          chunks[0] + chunks[1],
	} {
		t.Run(name, func(t *testing.T) {
			srv := providertest.NewGemini(t, providertest.Step{Raw: raw})
			_, err := newWire(t, srv, Config{}).Complete(context.Background(), sampleRequest(), nil)
			if !errors.Is(err, provider.ErrStreamCut) {
				t.Fatalf("err = %v: does not wrap provider.ErrStreamCut", err)
			}
			if !provider.Transient(err) {
				t.Fatalf("err = %v: not transient", err)
			}
			if !strings.HasPrefix(err.Error(), "gemini: ") || !strings.Contains(err.Error(), "(no finishReason)") {
				t.Fatalf("err = %q: does not name the wire and what was missing", err)
			}
		})
	}
}

// An answer whose HTTP/2 stream the server resets after a chunk that
// shows nothing comes back from the wire as a stream that broke off:
// transient, so the agent sends it again.
func TestAStreamResetOverHTTP2BeforeAnyOutputIsTransient(t *testing.T) {
	srv := providertest.ResetOverHTTP2(t, "text/event-stream", `data: {"candidates":[{"content":{"parts":[],"role":"model"},"index":0}]}`+"\n\n")
	p, err := New(Config{APIKey: "k", BaseURL: srv.URL, MaxRetries: -1, HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Complete(context.Background(), sampleRequest(), nil)
	providertest.WantBrokeOff(t, err)
}
