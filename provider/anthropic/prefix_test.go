package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/result"
)

// scripted is a conversation as an agent stores it and views it (see
// window.View): stored grows by appends and never changes; a request's
// messages are stored itself while there is no edit, else new Message
// values with the records left out, new Parts (a placeholder) for each
// cleared result and a new summary message for the messages a summary
// stands for, built anew for every request.
type scripted struct {
	stored  []history.Message
	cleared map[int]bool // places of stored results cleared
	through int          // a summary stands for stored[:through]; 0: none
	records bool         // a record has been stored
}

func (s *scripted) add(ms ...history.Message) { s.stored = append(s.stored, ms...) }

// round adds an answer of the model with a call, and its result.
func (s *scripted) round(n int) {
	answer := history.Message{Role: history.Assistant, Parts: []history.Part{
		{Type: history.TextPart, Text: fmt.Sprintf("Reading part %d.", n)},
		{Type: history.ToolCallPart, CallID: fmt.Sprintf("toolu_%d", n), Name: "workspace--read", Input: json.RawMessage(fmt.Sprintf(`{"path":"f%d.go"}`, n))},
	}}
	if n%7 == 3 { // thinking before the call, sent back as it came
		answer.Parts = append([]history.Part{{Type: history.ReasoningPart, Wire: Wire, Text: "hm", Raw: json.RawMessage(fmt.Sprintf(`{"type":"thinking","thinking":"hm %d","signature":"s"}`, n))}}, answer.Parts...)
	}
	res := history.Part{Type: history.ToolResultPart, CallID: fmt.Sprintf("toolu_%d", n), Text: fmt.Sprintf("package p%d\n\nfunc F() {} // \"%d\"\n", n, n), IsError: n%11 == 5}
	if n%13 == 4 {
		res.Images = []result.Image{{MIMEType: "image/png", Data: []byte{0x89, 'P', 'N', 'G', byte(n)}}}
	}
	s.add(answer, history.Message{Role: history.User, Parts: []history.Part{res}})
}

// view is the messages of the next request.
func (s *scripted) view() []history.Message {
	if !s.records {
		return s.stored[:len(s.stored):len(s.stored)]
	}
	var out []history.Message
	start := 0
	if s.through > 0 {
		out = append(out, history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "Summary: files were read."}}})
		start = s.through
	}
	for i, m := range s.stored[start:] {
		if m.IsRecord() {
			continue
		}
		if s.cleared[start+i] {
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

func (s *scripted) record() {
	s.records = true
	s.add(history.Message{Role: history.Context, Parts: []history.Part{{Type: history.TextPart, Text: "edit"}}})
}

func scriptedRequest(msgs []history.Message, key string) provider.Request {
	req := sampleRequest()
	req.Messages, req.CacheKey = msgs, key
	return req
}

// reuses reports whether p would build req on bytes it kept.
func reuses(p *Provider, req provider.Request) bool {
	return p.prefixes.Get(req.CacheKey, "", req.Messages) != nil
}

// A long conversation, with a prompt after unanswered results, empty
// answers, records, clearing edits and a summary, and a second
// conversation on the same Provider between its requests: every body a
// Provider builds on what it kept is BodyWith's, byte for byte, and most
// of them are built on kept bytes.
func TestCachedBodiesAreBodyWithsBytes(t *testing.T) {
	for _, th := range []Thinking{{}, {Budget: 1024}} {
		p := withOptions(Config{Thinking: th}, nil)
		var a, b scripted
		a.add(history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "read the files"}}})
		b.add(history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "other"}}})
		requests, reused := 0, 0
		check := func(s *scripted, key string) {
			t.Helper()
			req := scriptedRequest(s.view(), key)
			req.MaxTokens = 4096
			if reuses(p, req) {
				reused++
			}
			requests++
			got, err := p.Body(req)
			if err != nil {
				t.Fatal(err)
			}
			want, err := BodyWith(req, true, th)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("request %d of %s (%d messages): the cached body differs from BodyWith's:\n got %.300s\nwant %.300s", requests, key, len(req.Messages), got[firstDiff(got, want):], want[firstDiff(got, want):])
			}
		}
		for n := 0; n < 300; n++ {
			a.round(n)
			switch {
			case n%17 == 9: // a prompt after results the model never answered
				a.add(history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "and the next"}}})
			case n%19 == 2: // an empty answer
				a.add(history.Message{Role: history.Assistant})
			case n == 120 || n == 200: // clear the results of the first rounds
				a.record()
				if a.cleared == nil {
					a.cleared = map[int]bool{}
				}
				for i, m := range a.stored[:len(a.stored)/3] {
					if m.Role == history.User && m.Parts[0].Type == history.ToolResultPart {
						a.cleared[i] = true
					}
				}
			case n == 250: // summarise the first half
				a.record()
				a.through = len(a.stored) / 2
				for a.stored[a.through].Role != history.Assistant {
					a.through++
				}
			}
			check(&a, "a")
			if n%5 == 0 {
				b.round(n)
				check(&b, "b")
			}
		}
		if reused < requests*3/4 {
			t.Errorf("thinking %v: %d of %d requests were built on kept bytes, want most", th, reused, requests)
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return max(0, i-40)
		}
	}
	return max(0, min(len(a), len(b))-40)
}

// A message that changed in any way the encoder reads, under the same
// conversation, is never sent as the bytes kept for it.
func TestAChangedMessageIsNotSentAsItsKeptBytes(t *testing.T) {
	changes := []struct {
		name   string
		change func(m *history.Message)
	}{
		{"text of the same length", func(m *history.Message) { m.Parts[0].Text = "READ the files" }},
		{"role", func(m *history.Message) { m.Role = history.Assistant }},
		{"error flag", func(m *history.Message) { m.Parts[0].IsError = true }},
		{"call id", func(m *history.Message) { m.Parts[0].CallID = "toolu_X" }},
		{"image bytes", func(m *history.Message) {
			m.Parts[0].Images = []result.Image{{MIMEType: "image/png", Data: []byte("\x89PNX")}}
		}},
		{"a part more", func(m *history.Message) {
			m.Parts = append(m.Parts, history.Part{Type: history.TextPart, Text: "more"})
		}},
		{"made a record", func(m *history.Message) { m.Role = history.Context }},
	}
	for _, c := range changes {
		t.Run(c.name, func(t *testing.T) {
			p := withOptions(Config{}, nil)
			var s scripted
			s.add(history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "read the files"}}})
			for n := 0; n < 20; n++ {
				s.round(n)
				if _, err := p.Body(scriptedRequest(s.view(), "k")); err != nil {
					t.Fatal(err)
				}
			}
			s.round(20)
			msgs := s.view()
			for j := range 5 {
				b := p.prefixes.Kept("k").Len() // the first message not kept
				// the prompt, a result, an answer, the last kept and the
				// first not kept
				i := []int{0, 4, 9, b - 1, b}[j]
				changed := append([]history.Message(nil), msgs...)
				m := changed[i]
				m.Parts = append([]history.Part(nil), m.Parts...) // new Parts, as an edit makes
				c.change(&m)
				changed[i] = m
				req := scriptedRequest(changed, "k")
				got, err := p.Body(req)
				if err != nil {
					t.Fatal(err)
				}
				want, _ := BodyWith(req, true, Thinking{})
				if !bytes.Equal(got, want) {
					t.Fatalf("message %d changed (%s): the body is not BodyWith's:\n got %.200s\nwant %.200s", i, c.name, got[firstDiff(got, want):], want[firstDiff(got, want):])
				}
				// an answer put after the kept messages (it joins the last
				// of them)
				b = p.prefixes.Kept("k").Len()
				joined := append(append(append([]history.Message(nil), msgs[:b]...), history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: "joined"}}}), msgs[b:]...)
				req = scriptedRequest(joined, "k")
				got, _ = p.Body(req)
				if want, _ := BodyWith(req, true, Thinking{}); !bytes.Equal(got, want) {
					t.Fatalf("an answer put at %d: the body is not BodyWith's:\n got %.200s\nwant %.200s", b, got[firstDiff(got, want):], want[firstDiff(got, want):])
				}
				// a request cut short after the kept messages (its rolling
				// breakpoints fall among them), then the unchanged request
				for _, short := range [][]history.Message{msgs[:b+1], msgs[:b]} {
					req := scriptedRequest(short, "k")
					got, _ := p.Body(req)
					if want, _ := BodyWith(req, true, Thinking{}); !bytes.Equal(got, want) {
						t.Fatalf("a request of the first %d messages: the body is not BodyWith's:\n got %.200s\nwant %.200s", len(short), got[firstDiff(got, want):], want[firstDiff(got, want):])
					}
				}
				req = scriptedRequest(msgs, "k")
				got, _ = p.Body(req)
				if want, _ := BodyWith(req, true, Thinking{}); !bytes.Equal(got, want) {
					t.Fatalf("after message %d changed back: the body is not BodyWith's", i)
				}
			}
		})
	}
}

// Bodies are built on kept bytes only where those stand: the kept bytes
// themselves are what the next request sends (here made visible by
// changing them, which no caller may do).
func TestTheNextRequestIsBuiltOnTheKeptBytes(t *testing.T) {
	p := withOptions(Config{}, nil)
	var s scripted
	s.add(history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "read the files"}}})
	for n := 0; n < 10; n++ {
		s.round(n)
		if _, err := p.Body(scriptedRequest(s.view(), "k")); err != nil {
			t.Fatal(err)
		}
	}
	pre := p.prefixes.Kept("k")
	if pre == nil || pre.Len() < 15 {
		t.Fatalf("kept %v, want the first 15 messages or more", pre)
	}
	i := bytes.Index(pre.Bytes(), []byte("read the files"))
	if i < 0 {
		t.Fatalf("the kept bytes %.100s hold no prompt", pre.Bytes())
	}
	copy(pre.Bytes()[i:], "READ")
	s.round(10)
	got, _ := p.Body(scriptedRequest(s.view(), "k"))
	if !bytes.Contains(got, []byte("READ the files")) {
		t.Errorf("the next body %.100s was not built on the kept bytes", got)
	}
	if got, _ := p.Body(scriptedRequest(s.view(), "other")); !bytes.Contains(got, []byte("read the files")) {
		t.Errorf("another conversation's body %.100s was built on the kept bytes of k", got)
	}
}

// A Provider keeps the messages of provider.MaxPrefixes conversations at most,
// dropping the one used longest ago, and builds bodies of many
// conversations at once (run with -race).
func TestPrefixesAreBoundedAndSafeForConcurrentUse(t *testing.T) {
	p := withOptions(Config{}, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 3*provider.MaxPrefixes)
	for c := range 3 * provider.MaxPrefixes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var s scripted
			s.add(history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "go"}}})
			for n := range 30 {
				s.round(n)
				// two conversations per key: their requests alternate
				req := scriptedRequest(s.view(), fmt.Sprint(c/2))
				got, err := p.Body(req)
				if err != nil {
					errs <- err
					return
				}
				if want, _ := BodyWith(req, true, Thinking{}); !bytes.Equal(got, want) {
					errs <- fmt.Errorf("conversation %d, request %d: the body is not BodyWith's", c, n)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	kept := p.prefixes.Conversations()
	if kept > provider.MaxPrefixes {
		t.Errorf("%d conversations kept, want %d at most", kept, provider.MaxPrefixes)
	}
	if kept == 0 {
		t.Error("nothing kept")
	}
}
