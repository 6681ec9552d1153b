package agent

import (
	"context"
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/sqlite"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/tool"
)

// BenchmarkResume builds the first request of a stored conversation of
// 10k and 100k messages after a restart — from opening the store to the
// Anthropic body built — side by side with its floor, a running agent's
// next request ("warm": its store and wire have read and encoded the
// conversation before):
//
//   - "resumed": a new store handle and a new wire; the conversation read
//     whole, the resume point read beside it (read-ms), the point checked
//     and given to the wire (resume-ms: what of its read did not overlap
//     the conversation's, and its check), the request and its body built
//     on it (body-ms);
//   - "cold": the same without a resume point (the wire encodes every
//     message), what a restart cost before.
//
// Run:
//
//	go test ./agent -run '^$' -bench Resume -count 3
func BenchmarkResume(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{10000, 100000} {
		path := filepath.Join(b.TempDir(), "h.db")
		store, err := sqlite.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		wire := func() *anthropic.Provider {
			p, err := anthropic.New(anthropic.Config{APIKey: "k", BaseURL: "http://127.0.0.1:1"})
			if err != nil {
				b.Fatal(err)
			}
			return p
		}
		tools := &tool.Registry{}
		a := &Agent{Provider: wire(), Store: store, Tools: tools, Model: "m"}
		id, _ := a.NewConversation(ctx)
		var batch []history.Message
		for i := 0; i < n; i += 2 {
			batch = append(batch, roundOf(i)...)
			if len(batch) >= 1000 {
				if err := store.Append(ctx, id, batch...); err != nil {
					b.Fatal(err)
				}
				batch = batch[:0]
			}
		}
		// the running agent's last request, and the point its turn kept
		build := func(a *Agent) builtBody {
			req, err := a.Request(ctx, id)
			if err != nil || len(req.Messages) < n {
				b.Fatal(len(req.Messages), err)
			}
			body, err := a.Provider.(*anthropic.Provider).Body(req)
			if err != nil {
				b.Fatal(err)
			}
			return builtBody{req.Messages, body}
		}
		last := build(a)
		sz, err := a.sizing(ctx, id)
		if err != nil {
			b.Fatal(err)
		}
		a.keepResume(ctx, id, sz.key, len(last.msgs), last.msgs)
		if _, err := store.ResumeOf(ctx, id); err != nil {
			b.Fatal("no resume point kept: ", err)
		}
		b.Run(fmt.Sprintf("%dk-messages/warm", n/1000), func(b *testing.B) {
			for b.Loop() {
				build(a)
			}
		})
		restart := func(b *testing.B, resume bool) {
			var read, resumed, body time.Duration
			for b.Loop() {
				start := time.Now()
				fresh, err := sqlite.Open(path)
				if err != nil {
					b.Fatal(err)
				}
				r := &Agent{Provider: wire(), Store: fresh, Tools: tools, Model: "m"}
				var pending *pendingResume
				if resume { // read beside the conversation, as a turn does
					pending = r.prefetchResume(ctx, id)
				}
				stored, err := fresh.Messages(ctx, id)
				if err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if resume && !r.resumePrefix(pending, stored) {
					b.Fatal("the resume point was not taken")
				}
				t2 := time.Now()
				build(r)
				t3 := time.Now()
				read, resumed, body = read+t1.Sub(start), resumed+t2.Sub(t1), body+t3.Sub(t2)
				b.StopTimer()
				fresh.Close()
				b.StartTimer()
			}
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
			b.ReportMetric(ms(read), "read-ms/op")
			b.ReportMetric(ms(resumed), "resume-ms/op")
			b.ReportMetric(ms(body), "body-ms/op")
		}
		b.Run(fmt.Sprintf("%dk-messages/resumed", n/1000), func(b *testing.B) { restart(b, true) })
		b.Run(fmt.Sprintf("%dk-messages/cold", n/1000), func(b *testing.B) { restart(b, false) })
		store.Close()
	}
}

// builtBody is a request's messages and the body built for them.
type builtBody struct {
	msgs []history.Message
	body []byte
}

// BenchmarkResumeDigest is the digest a resume checks a point with
// (digestOf) of 100,000 messages, beside the floor: SHA-256 of a buffer
// of the same size. Run:
//
//	go test ./agent -run '^$' -bench ResumeDigest -count 6
func BenchmarkResumeDigest(b *testing.B) {
	var msgs []history.Message
	for i := 0; i < 100000; i += 2 {
		msgs = append(msgs, roundOf(i)...)
	}
	size := 0
	for _, m := range msgs {
		for _, p := range m.Parts {
			size += len(p.Text) + len(p.CallID) + len(p.Name) + len(p.Input) + 16
		}
	}
	b.Run("digestOf", func(b *testing.B) {
		for b.Loop() {
			digestOf(msgs)
		}
	})
	flat := make([]byte, size)
	b.Run("sha256-floor", func(b *testing.B) {
		for b.Loop() {
			sha256.Sum256(flat)
		}
	})
}
