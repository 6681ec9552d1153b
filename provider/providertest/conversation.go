package providertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"unsafe"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/result"
)

// Conversation is a conversation as an agent stores it and views it (see
// window.View), for testing a wire that keeps the encoded start of a
// conversation's bodies (prefix.Cache): Stored grows by appends and
// never changes; a request's messages are Stored itself while there is no
// edit, else new Message values with the records left out, new Parts (a
// placeholder) for each cleared result and a new summary message for the
// messages a summary stands for, built anew for every request.
type Conversation struct {
	Stored  []history.Message
	Cleared map[int]bool // places of stored results cleared
	Through int          // a summary stands for Stored[:Through]; 0: none
	records bool         // a record has been stored
	// Reasoning, when set, is the wire's own reasoning part, put before
	// the call of every seventh round (it is sent back as it came).
	Reasoning func(n int) history.Part
}

// Add stores ms.
func (c *Conversation) Add(ms ...history.Message) { c.Stored = append(c.Stored, ms...) }

// Round stores round n: an answer of the model with a text and a call,
// and its result (an error every 11th, an image every 13th).
func (c *Conversation) Round(n int) {
	answer := history.Message{Role: history.Assistant, Parts: []history.Part{
		{Type: history.TextPart, Text: fmt.Sprintf("Reading part %d.", n)},
		{Type: history.ToolCallPart, CallID: fmt.Sprintf("toolu_%d", n), Name: "workspace--read", Input: json.RawMessage(fmt.Sprintf(`{"path":"f%d.go"}`, n))},
	}}
	if n%7 == 3 && c.Reasoning != nil {
		answer.Parts = append([]history.Part{c.Reasoning(n)}, answer.Parts...)
	}
	res := history.Part{Type: history.ToolResultPart, CallID: fmt.Sprintf("toolu_%d", n), Text: fmt.Sprintf("package p%d\n\nfunc F() {} // \"%d\"\n", n, n), IsError: n%11 == 5}
	if n%13 == 4 {
		res.Images = []result.Image{{MIMEType: "image/png", Data: []byte{0x89, 'P', 'N', 'G', byte(n)}}}
	}
	c.Add(answer, history.Message{Role: history.User, Parts: []history.Part{res}})
}

// View is the messages of the next request.
func (c *Conversation) View() []history.Message {
	if !c.records {
		return c.Stored[:len(c.Stored):len(c.Stored)]
	}
	var out []history.Message
	start := 0
	if c.Through > 0 {
		out = append(out, history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "Summary: files were read."}}})
		start = c.Through
	}
	for i, m := range c.Stored[start:] {
		if m.IsRecord() {
			continue
		}
		if c.Cleared[start+i] {
			parts := make([]history.Part, len(m.Parts))
			copy(parts, m.Parts)
			parts[0].Text = fmt.Sprintf("[result cleared: %d bytes]", len(parts[0].Text))
			parts[0].Images = nil
			m.Parts = parts
		}
		out = append(out, m)
	}
	return out
}

// Record stores a record (an edit of the view: a context decision).
func (c *Conversation) Record() {
	c.records = true
	c.Add(history.Message{Role: history.Context, Parts: []history.Part{{Type: history.TextPart, Text: "edit"}}})
}

// KeptBodies is what CheckKeptBodies runs a wire's body builder against.
type KeptBodies struct {
	// Base is the request each one is made from: its model, system
	// prompt, tools and limits; its messages and cache key are replaced.
	Base provider.Request
	// Kept builds a body on what the wire kept of the conversation's
	// earlier bodies; Whole encodes the same request afresh.
	Kept, Whole func(provider.Request) ([]byte, error)
	// Reuses reports whether Kept would build req on bytes it kept.
	Reuses func(req provider.Request) bool
	// Reasoning is the wire's own reasoning part, or nil (Conversation).
	Reasoning func(n int) history.Part
	// Answered, when set, is what the wire does with a body once it was
	// sent and answered (prefix.Cache.Release: the next body of the
	// conversation may be written into its memory). It is called after
	// the body is checked; the bodies checked later hold it to having
	// written each next body whole and left the kept bytes as they were.
	Answered func(req provider.Request, body []byte)
}

// CheckKeptBodies runs a long conversation — with a prompt after
// unanswered results, empty answers, records, clearing edits and a
// summary, and a second conversation on the same wire between its
// requests — through k.Kept and fails t unless every body is k.Whole's,
// byte for byte, and most were built on kept bytes.
func CheckKeptBodies(t *testing.T, k KeptBodies) {
	t.Helper()
	a := Conversation{Reasoning: k.Reasoning}
	b := Conversation{Reasoning: k.Reasoning}
	a.Add(history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "read the files"}}})
	b.Add(history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "other"}}})
	requests, reused := 0, 0
	check := func(c *Conversation, key string) {
		t.Helper()
		req := k.Base
		req.Messages, req.CacheKey = c.View(), key
		if k.Reuses(req) {
			reused++
		}
		requests++
		got, err := k.Kept(req)
		if err != nil {
			t.Fatal(err)
		}
		want, err := k.Whole(req)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			at := FirstDiff(got, want)
			t.Fatalf("request %d of %s (%d messages): the body built on kept bytes differs from the whole encoding:\n got %.300s\nwant %.300s", requests, key, len(req.Messages), got[at:], want[at:])
		}
		if k.Answered != nil {
			k.Answered(req, got)
		}
	}
	for n := 0; n < 300; n++ {
		a.Round(n)
		switch {
		case n%17 == 9: // a prompt after results the model never answered
			a.Add(history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "and the next"}}})
		case n%19 == 2: // an empty answer
			a.Add(history.Message{Role: history.Assistant})
		case n == 120 || n == 200: // clear the results of the first rounds
			a.Record()
			if a.Cleared == nil {
				a.Cleared = map[int]bool{}
			}
			for i, m := range a.Stored[:len(a.Stored)/3] {
				if m.Role == history.User && m.Parts[0].Type == history.ToolResultPart {
					a.Cleared[i] = true
				}
			}
		case n == 250: // summarise the first half
			a.Record()
			a.Through = len(a.Stored) / 2
			for a.Stored[a.Through].Role != history.Assistant {
				a.Through++
			}
		}
		check(&a, "a")
		if n%5 == 0 {
			b.Round(n)
			check(&b, "b")
		}
	}
	if reused < requests*3/4 {
		t.Errorf("%d of %d requests were built on kept bytes, want most", reused, requests)
	}
}

// FirstDiff is a little before where a and b first differ, to show them
// from there.
func FirstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return max(0, i-40)
		}
	}
	return max(0, min(len(a), len(b))-40)
}

// CheckBodiesInPlace sends a growing conversation (base's settings, its
// messages replaced) on p, which must send to srv, and fails t unless
// every body p reported (OnBody) and srv received is whole's, and most
// were written into the memory of the body before them, which p may
// reuse once the request was answered and written (Prefixes.Release);
// never after a request srv refused.
func CheckBodiesInPlace(t *testing.T, srv *Server, p provider.Provider, base provider.Request, whole func(provider.Request) ([]byte, error)) {
	t.Helper()
	var c Conversation
	c.Add(history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "read the files"}}})
	var last []byte
	inPlace := 0
	for n := 0; n < 12; n++ {
		c.Round(n)
		req := base
		req.Messages, req.CacheKey = c.View(), "k"
		step := Step{Text: "ok"}
		if n == 6 {
			step = Step{Status: http.StatusBadRequest, ErrorMessage: "refused"}
		}
		srv.Push(step)
		var reported []byte
		req.OnBody = func(b []byte) { reported = b }
		_, err := p.Complete(context.Background(), req, nil)
		if (err != nil) != (n == 6) {
			t.Fatalf("request %d: %v", n, err)
		}
		want, werr := whole(req)
		got := srv.Requests()
		if werr != nil || !bytes.Equal(reported, want) || !bytes.Equal(got[len(got)-1], want) {
			t.Fatalf("request %d (%v): reported\n%s\nreceived\n%s\nwant\n%s", n, werr, reported, got[len(got)-1], want)
		}
		if last != nil && unsafe.SliceData(reported) == unsafe.SliceData(last) {
			inPlace++
			if n == 7 {
				t.Fatal("the body after a refused request was written into the refused one's memory")
			}
		}
		last = reported
	}
	if inPlace < 6 {
		t.Fatalf("%d of 11 bodies were written into the memory of the one before, want most (not the one after the refusal, nor one outgrowing the memory)", inPlace)
	}
}
