package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"unsafe"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/internal/prefix"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/result"
)

// scripted is the conversation the tests below build bodies for.
type scripted = providertest.Conversation

func thinkingPart(n int) history.Part {
	return history.Part{Type: history.ReasoningPart, Wire: Wire, Text: "hm", Raw: json.RawMessage(fmt.Sprintf(`{"type":"thinking","thinking":"hm %d","signature":"s"}`, n))}
}

func scriptedRequest(msgs []history.Message, key string) provider.Request {
	req := providertest.SampleRequest()
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
		p := offline(t, Config{Thinking: th})
		base := providertest.SampleRequest()
		base.MaxTokens = 4096
		providertest.CheckKeptBodies(t, providertest.KeptBodies{
			Base:      base,
			Kept:      p.Body,
			Whole:     func(req provider.Request) ([]byte, error) { return BodyWith(req, true, th) },
			Reuses:    func(req provider.Request) bool { return reuses(p, req) },
			Reasoning: thinkingPart,
		})
	}
}

// The same, each body given back once checked, as Complete gives back an
// answered one: the next body of the conversation is written into its
// memory, and every body is still BodyWith's.
func TestBodiesWrittenIntoTheLastOnesMemoryAreBodyWithsBytes(t *testing.T) {
	p := offline(t, Config{})
	base := providertest.SampleRequest()
	base.MaxTokens = 4096
	var last []byte
	inPlace := 0
	providertest.CheckKeptBodies(t, providertest.KeptBodies{
		Base:  base,
		Whole: func(req provider.Request) ([]byte, error) { return BodyWith(req, true, Thinking{}) },
		Kept: func(req provider.Request) ([]byte, error) {
			b, err := p.Body(req)
			if inMemoryOf(b, last) {
				inPlace++
			}
			return b, err
		},
		Reuses:    func(req provider.Request) bool { return reuses(p, req) },
		Reasoning: thinkingPart,
		Answered: func(req provider.Request, body []byte) {
			if req.CacheKey == "a" {
				last = body
			}
			p.prefixes.Release(req.CacheKey, body)
		},
	})
	if inPlace < 100 {
		t.Errorf("%d bodies were written into the memory of the one before, want most", inPlace)
	}
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
			p := offline(t, Config{})
			s := scripted{Reasoning: thinkingPart}
			s.Add(history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "read the files"}}})
			for n := 0; n < 20; n++ {
				s.Round(n)
				if _, err := p.Body(scriptedRequest(s.View(), "k")); err != nil {
					t.Fatal(err)
				}
			}
			s.Round(20)
			msgs := s.View()
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
					t.Fatalf("message %d changed (%s): the body is not BodyWith's:\n got %.200s\nwant %.200s", i, c.name, got[providertest.FirstDiff(got, want):], want[providertest.FirstDiff(got, want):])
				}
				// an answer put after the kept messages (it joins the last
				// of them)
				b = p.prefixes.Kept("k").Len()
				joined := append(append(append([]history.Message(nil), msgs[:b]...), history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: "joined"}}}), msgs[b:]...)
				req = scriptedRequest(joined, "k")
				got, _ = p.Body(req)
				if want, _ := BodyWith(req, true, Thinking{}); !bytes.Equal(got, want) {
					t.Fatalf("an answer put at %d: the body is not BodyWith's:\n got %.200s\nwant %.200s", b, got[providertest.FirstDiff(got, want):], want[providertest.FirstDiff(got, want):])
				}
				// a request cut short after the kept messages (its rolling
				// breakpoints fall among them), then the unchanged request
				for _, short := range [][]history.Message{msgs[:b+1], msgs[:b]} {
					req := scriptedRequest(short, "k")
					got, _ := p.Body(req)
					if want, _ := BodyWith(req, true, Thinking{}); !bytes.Equal(got, want) {
						t.Fatalf("a request of the first %d messages: the body is not BodyWith's:\n got %.200s\nwant %.200s", len(short), got[providertest.FirstDiff(got, want):], want[providertest.FirstDiff(got, want):])
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
	p := offline(t, Config{})
	s := scripted{Reasoning: thinkingPart}
	s.Add(history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "read the files"}}})
	for n := 0; n < 10; n++ {
		s.Round(n)
		if _, err := p.Body(scriptedRequest(s.View(), "k")); err != nil {
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
	s.Round(10)
	got, _ := p.Body(scriptedRequest(s.View(), "k"))
	if !bytes.Contains(got, []byte("READ the files")) {
		t.Errorf("the next body %.100s was not built on the kept bytes", got)
	}
	if got, _ := p.Body(scriptedRequest(s.View(), "other")); !bytes.Contains(got, []byte("read the files")) {
		t.Errorf("another conversation's body %.100s was built on the kept bytes of k", got)
	}
}

// A Provider keeps the messages of prefix.MaxConversations conversations at most,
// dropping the one used longest ago, and builds bodies of many
// conversations at once (run with -race).
func TestPrefixesAreBoundedAndSafeForConcurrentUse(t *testing.T) {
	p := offline(t, Config{})
	var wg sync.WaitGroup
	errs := make(chan error, 3*prefix.MaxConversations)
	for c := range 3 * prefix.MaxConversations {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := scripted{Reasoning: thinkingPart}
			s.Add(history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "go"}}})
			for n := range 30 {
				s.Round(n)
				// two conversations per key: their requests alternate
				req := scriptedRequest(s.View(), fmt.Sprint(c/2))
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
	if kept > prefix.MaxConversations {
		t.Errorf("%d conversations kept, want %d at most", kept, prefix.MaxConversations)
	}
	if kept == 0 {
		t.Error("nothing kept")
	}
}

// Over loopback, a conversation's next body is written into the memory
// of the answered one before it, and every body is BodyWith's.
func TestCompleteWritesTheNextBodyIntoTheAnsweredOnesMemory(t *testing.T) {
	srv := providertest.NewAnthropic(t)
	providertest.CheckBodiesInPlace(t, srv, newProvider(t, srv, false), providertest.SampleRequest(), func(req provider.Request) ([]byte, error) {
		return BodyWith(req, true, Thinking{})
	})
}

// Building a body in the memory of the one given back allocates a small
// part of its size: not a new buffer for it (a body of ~200 KiB here).
func TestABodyBuiltInTheLastOnesMemoryAllocatesNoBuffer(t *testing.T) {
	p := offline(t, Config{})
	s := scripted{}
	s.Add(history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "read the files"}}})
	var body []byte
	for n := 0; n < 400; n++ {
		s.Round(n)
		req := scriptedRequest(s.View(), "k")
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		b, err := p.Body(req)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		if n == 399 {
			if !inMemoryOf(b, body) {
				t.Fatal("the last body was not built in the memory of the one before")
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > uint64(len(b)/8) {
				t.Fatalf("building a body of %d bytes in the last one's memory allocated %d bytes", len(b), grew)
			}
		}
		p.prefixes.Release(req.CacheKey, b)
		body = b
	}
}

// inMemoryOf reports whether b starts where last does.
func inMemoryOf(b, last []byte) bool {
	return len(b) > 0 && len(last) > 0 && unsafe.SliceData(b) == unsafe.SliceData(last)
}

// offline is the first-party wire for cfg, made without a key: for what
// builds bodies and sends nothing.
func offline(t testing.TB, cfg Config) *Provider {
	t.Helper()
	p, err := newWire(cfg, connection{wire: Wire})
	if err != nil {
		t.Fatal(err)
	}
	return p
}
