package anthropic

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/internal/prefix"
	"github.com/myelin-run/myelin/provider"
)

// onCores is f run with GOMAXPROCS n: how many parts spread may cut a
// body's messages in.
func onCores(n int, f func()) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(n))
	f()
}

// spreadConversation is a conversation of rounds whose messages encode
// to several spreadParts: prompts after unanswered results (two user
// messages in one group), empty answers, records, thinking blocks,
// images and errors (scripted's), and, with escapes set, results of
// control characters, each six bytes encoded, far past sizeHint's slack,
// so that parts outgrow their places.
func spreadConversation(rounds int, escapes bool) []history.Message {
	c := &scripted{Reasoning: thinkingPart}
	c.Add(history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "read them all"}}})
	long := strings.Repeat("a line of output, \"quoted\" and \\ escaped\n", 12)
	for n := range rounds {
		c.Round(n)
		m := &c.Stored[len(c.Stored)-1]
		m.Parts[0].Text += long
		if escapes && n%3 == 0 {
			m.Parts[0].Text = strings.Repeat("\x1b\x01", 300)
		}
		switch n % 97 {
		case 5:
			c.Add(history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: fmt.Sprintf("and now %d", n)}}})
		case 6:
			c.Add(history.Message{Role: history.Assistant})
		case 7:
			c.Add(history.Message{Role: history.Context, Edit: &history.Edit{}})
		}
	}
	c.Add(history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "go on"}}})
	return c.Stored
}

// A body whose messages are encoded on several goroutines (spread) is the
// body one goroutine encodes, byte for byte: in parts that fit their
// places and in parts that outgrow them; and the bytes a Provider keeps
// of it for the next request (the cut) are that request's own, so that
// the next body, built on them, is BodyWith's too.
func TestASpreadBodyIsOneEncodersBody(t *testing.T) {
	for _, escapes := range []bool{false, true} {
		t.Run(fmt.Sprintf("escapes=%v", escapes), func(t *testing.T) {
			msgs := spreadConversation(6000, escapes)
			req := scriptedRequest(msgs, "c")
			var one []byte
			onCores(1, func() { one = mustBody(t, req) })
			if len(one) < 4*spreadPart {
				t.Fatalf("the body is %d bytes, too short to be spread in parts", len(one))
			}
			for _, cores := range []int{2, 3, 8} {
				onCores(cores, func() {
					if got := mustBody(t, req); !bytes.Equal(got, one) {
						t.Fatalf("on %d cores the body differs from one goroutine's first at byte %d", cores, firstDiff(got, one))
					}
					// and on a Provider: the next request built on
					// what it kept of this one
					p := &Provider{heads: &headCache{}, prefixes: &prefix.Cache{}}
					if got, err := p.Body(req); err != nil || !bytes.Equal(got, mustBodyWith(t, req, p.cfg)) {
						t.Fatalf("on %d cores the Provider's body differs (%v)", cores, err)
					}
					next := scriptedRequest(append(msgs[:len(msgs):len(msgs)],
						history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: "on it"}}},
						history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "and then"}}}), "c")
					if !reuses(p, next) {
						t.Fatal("the Provider kept nothing of the spread body for the next request")
					}
					got, err := p.Body(next)
					if err != nil {
						t.Fatal(err)
					}
					var want []byte
					onCores(1, func() { want = mustBody(t, next) })
					if !bytes.Equal(got, want) {
						t.Fatalf("on %d cores the next body, built on the kept bytes, differs from BodyWith's first at byte %d", cores, firstDiff(got, want))
					}
				})
			}
		})
	}
}

func mustBody(t *testing.T, req provider.Request) []byte {
	t.Helper()
	b, err := Body(req, true)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustBodyWith(t *testing.T, req provider.Request, cfg Config) []byte {
	t.Helper()
	b, err := BodyWith(req, !cfg.NoStream, cfg.Thinking)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// firstDiff is the first place a and b differ.
func firstDiff(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
