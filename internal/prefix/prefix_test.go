package prefix

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"unsafe"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/internal/hugepage"
	"github.com/myelin-run/myelin/result"
)

// described is p in a line: how many messages it holds, the role it was
// kept with, its bytes; "none" for nil.
func described(p *Prefix) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprintf("%d messages, last %s: %s", p.Len(), p.Last(), p.Bytes())
}

func text(role history.Role, s string) history.Message {
	return history.Message{Role: role, Parts: []history.Part{{Type: history.TextPart, Text: s}}}
}

// A kept prefix is handed out only for the lead it was kept after and
// messages that start with those it was made of: the same Parts, or Parts
// equal in every field; any field that differs refuses it.
func TestAPrefixIsHandedOutOnlyForWhatItWasMadeOf(t *testing.T) {
	call := history.Part{Type: history.ToolCallPart, CallID: "c1", Name: "t", Input: json.RawMessage(`{"a":1}`)}
	msgs := []history.Message{
		text(history.User, "go"),
		{Role: history.Assistant, Parts: []history.Part{call}},
		text(history.User, "more"),
	}
	var c Cache
	c.Put("k", "system", nil, msgs[:2], []byte(`{"messages":[..`), history.Assistant)

	if got, want := described(c.Get("k", "system", msgs)), "2 messages, last assistant: {\"messages\":[.."; got != want {
		t.Fatalf("Get of the same messages = %s, want the kept prefix: %s", got, want)
	}
	copied := append([]history.Message(nil), msgs...)
	copied[1].Parts = append([]history.Part(nil), msgs[1].Parts...) // equal Parts at another address
	if c.Get("k", "system", copied) == nil {
		t.Error("Parts equal in every field at another address refused")
	}
	changes := map[string]func(*history.Part){
		"text":       func(p *history.Part) { p.Text = "x" },
		"call id":    func(p *history.Part) { p.CallID = "c2" },
		"name":       func(p *history.Part) { p.Name = "u" },
		"input":      func(p *history.Part) { p.Input = json.RawMessage(`{"a":2}`) },
		"input nil":  func(p *history.Part) { p.Input = nil },
		"error":      func(p *history.Part) { p.IsError = true },
		"spill path": func(p *history.Part) { p.SpillPath = "f" },
		"wire":       func(p *history.Part) { p.Wire = "gemini" },
		"raw":        func(p *history.Part) { p.Raw = json.RawMessage(`{}`) },
		"signature":  func(p *history.Part) { p.Signature = "s" },
		"images":     func(p *history.Part) { p.Images = []result.Image{{MIMEType: "image/png"}} },
		"type":       func(p *history.Part) { p.Type = history.TextPart },
	}
	for name, change := range changes {
		changed := append([]history.Message(nil), msgs...)
		changed[1].Parts = append([]history.Part(nil), msgs[1].Parts...)
		change(&changed[1].Parts[0])
		if c.Get("k", "system", changed) != nil {
			t.Errorf("a call whose %s changed was given the kept prefix", name)
		}
	}
	roled := append([]history.Message(nil), msgs...)
	roled[0].Role = history.Context
	for name, got := range map[string]*Prefix{
		"another lead":         c.Get("k", "other system", msgs),
		"another conversation": c.Get("j", "system", msgs),
		"fewer messages":       c.Get("k", "system", msgs[:1]),
		"another role":         c.Get("k", "system", roled),
	} {
		if got != nil {
			t.Errorf("%s: given the kept prefix", name)
		}
	}
}

// A prefix built on the one before keeps growing its keys in place; the
// earlier prefix still holds for the messages it was made of, and a
// second prefix built on the same earlier one does not overwrite the
// first's keys.
func TestPrefixesBuiltOnOneAnotherEachHoldForTheirOwnMessages(t *testing.T) {
	var c Cache
	msgs := make([]history.Message, 6)
	for i := range msgs {
		msgs[i] = text(history.Role([]history.Role{history.User, history.Assistant}[i%2]), fmt.Sprint("m", i))
	}
	c.Put("k", "", nil, msgs[:2], []byte("ab"), history.Assistant)
	first := c.Get("k", "", msgs)
	c.Put("k", "", first, msgs[2:4], []byte("abcd"), history.Assistant)
	second := c.Get("k", "", msgs)
	if second == nil || second.Len() != 4 {
		t.Fatalf("the second prefix = %+v, want 4 messages", second)
	}
	// another branch from first: its keys must not land in second's
	other := append(append([]history.Message(nil), msgs[:2]...), text(history.User, "else"), text(history.Assistant, "else"))
	c.Put("k", "", first, other[2:4], []byte("abXY"), history.Assistant)
	if !second.matches("", msgs) {
		t.Error("a prefix built on the same earlier one overwrote the second's keys")
	}
	if !first.matches("", other) || !first.matches("", msgs) {
		t.Error("the first prefix no longer holds for its own messages")
	}
	if got, want := described(c.Get("k", "", other)), "4 messages, last assistant: abXY"; got != want {
		t.Errorf("the kept prefix for the other branch = %s, want %s", got, want)
	}
}

// At most MaxConversations conversations are kept, the one used longest ago
// dropped first; a nil Cache keeps nothing.
func TestPrefixesKeepTheConversationsUsedLast(t *testing.T) {
	var c Cache
	m := []history.Message{text(history.User, "go")}
	for i := range MaxConversations {
		c.Put(fmt.Sprint(i), "", nil, m, []byte("x"), history.User)
	}
	c.Get("0", "", m) // used: 1 is now the oldest
	c.Put("new", "", nil, m, []byte("x"), history.User)
	if n := c.Conversations(); n != MaxConversations {
		t.Errorf("%d conversations kept, want %d", n, MaxConversations)
	}
	if c.Kept("0") == nil || c.Kept("1") != nil || c.Kept("new") == nil {
		t.Errorf("kept 0: %v, 1: %v, new: %v; want the one used longest ago (1) dropped", c.Kept("0") != nil, c.Kept("1") != nil, c.Kept("new") != nil)
	}
	var none *Cache
	none.Put("k", "", nil, m, []byte("x"), history.User)
	if none.Get("k", "", m) != nil || none.Conversations() != 0 {
		t.Error("a nil Cache kept something")
	}
}

// Requests of one conversation may be built at once: one gets the kept
// prefix while another keeps a new one (run with -race; it caught Get
// reading the kept prefix after letting go of the lock).
func TestOneConversationsPrefixIsGotAndKeptAtOnce(t *testing.T) {
	var c Cache
	m := []history.Message{text(history.User, "go"), text(history.Assistant, "ok")}
	done := make(chan bool)
	for g := range 4 {
		go func() {
			defer func() { done <- true }()
			for range 200 {
				if g%2 == 0 {
					c.Put("k", "", nil, m, []byte("x"), history.User)
				} else if p := c.Get("k", "", m); p != nil && p.Len() != 2 {
					t.Errorf("got a prefix of %d messages, want 2", p.Len())
				}
			}
		}()
	}
	for range 4 {
		<-done
	}
}

// A body given back is where the conversation's next body is written,
// after the kept prefix's bytes, which stay as they were: handed out
// once, only on the prefix kept last, and only when it has room; any
// other case gets new memory holding the prefix's bytes.
func TestABodyGivenBackIsWhereTheNextBodyIsWritten(t *testing.T) {
	msgs := []history.Message{text(history.User, "go"), text(history.Assistant, "ok"), text(history.User, "more")}
	body := func(kept string, size int) []byte { // a wire's body: the kept bytes, then the rest
		b := make([]byte, 0, size)
		return append(b, kept+`,"rest"]}`...)
	}
	kept := `{"messages":["go"`
	first := body(kept, 256)
	var c Cache
	c.Put("k", "", nil, msgs[:1], first[:len(kept):len(kept)], history.User)
	p := c.Get("k", "", msgs)

	if b := c.Buffer("k", p, 64); unsafe.SliceData(b) == unsafe.SliceData(first) || string(b) != kept {
		t.Fatalf("before Release, Buffer = %q at the body's memory: want new memory holding %q", b, kept)
	}
	c.Release("k", first)
	b := c.Buffer("k", p, 64)
	if unsafe.SliceData(b) != unsafe.SliceData(first) || string(b) != kept {
		t.Fatalf("after Release, Buffer = %q (the body's memory: %v), want %q in the body's memory",
			b, unsafe.SliceData(b) == unsafe.SliceData(first), kept)
	}
	if again := c.Buffer("k", p, 64); unsafe.SliceData(again) == unsafe.SliceData(first) {
		t.Fatal("the body given back was handed out twice")
	}
	b = append(b, `,"ok","more"`...) // the next body, written in place
	if string(p.Bytes()) != kept {
		t.Fatalf("writing the next body changed the kept prefix to %q", p.Bytes())
	}

	c.Release("k", b)
	if got := c.Buffer("k", p, 1024); unsafe.SliceData(got) == unsafe.SliceData(first) || string(got) != kept {
		t.Fatalf("a body without room for size was handed out (%q)", got)
	}
	c.Release("k", b)
	c.Put("k", "", p, msgs[1:2], b[:len(kept)+5:len(kept)+5], history.Assistant)
	if got := c.Buffer("k", p, 64); unsafe.SliceData(got) == unsafe.SliceData(first) {
		t.Fatal("a body given back was handed out on a prefix no longer kept last")
	}
	c.Release("k", body(`{"messages":["other"`, 256))
	if got := c.Buffer("k", c.Get("k", "", msgs), 64); unsafe.SliceData(got) == unsafe.SliceData(first) || string(got) != kept+`,"ok"` {
		t.Fatalf("after a Put, Buffer = %q: want new memory holding the new prefix", got)
	}
	var none *Cache
	none.Release("k", first)
	if got := none.Buffer("k", p, 8); string(got) != kept {
		t.Fatalf("a nil Cache's Buffer = %q, want a copy of the prefix", got)
	}
}

// GetPartial cuts a prefix kept with ends after the last of the messages
// that still hold: its bytes up to that message's end; the kept prefix
// itself when all hold, built on again in place; nothing for another
// lead, when the first message does not hold, or for a prefix kept
// without ends, which cannot be cut. A body built on a cut is new memory:
// it would otherwise write over bytes the kept prefix still hands out.
func TestAPartialPrefixIsCutAfterTheMessagesThatHold(t *testing.T) {
	msgs := []history.Message{text(history.User, "a"), text(history.Assistant, "b"), text(history.User, "c")}
	kept := "{[a,b,c"
	var c Cache
	c.Put("k", "lead", nil, msgs, []byte(kept), "", 3, 5, 7)
	whole := c.GetPartial("k", "lead", msgs)
	if whole == nil || whole != c.Kept("k") || whole != c.Get("k", "lead", msgs) {
		t.Fatalf("every message holding: GetPartial = %+v, want the kept prefix", whole)
	}
	edited := append(slices.Clone(msgs[:2]), text(history.User, "C"))
	for name, tc := range map[string]struct {
		msgs []history.Message
		want string
	}{
		"the last edited":   {edited, "{[a,b"},
		"the second edited": {[]history.Message{msgs[0], text(history.Assistant, "B"), msgs[2]}, "{[a"},
		"fewer messages":    {msgs[:1], "{[a"},
		"more messages":     {append(slices.Clone(msgs), text(history.Assistant, "d")), kept},
	} {
		p := c.GetPartial("k", "lead", tc.msgs)
		if p == nil || string(p.Bytes()) != tc.want || p.Len() != (len(tc.want)-1)/2 {
			t.Errorf("%s: GetPartial = %+v, want the bytes %q", name, p, tc.want)
		}
	}
	cut := c.GetPartial("k", "lead", edited)
	c.Release("k", []byte(kept+"]}"))
	if b := c.Buffer("k", cut, 64); string(b) != "{[a,b" || unsafe.SliceData(b) == unsafe.SliceData(whole.Bytes()) {
		t.Fatalf("Buffer on a cut = %q in the kept bytes' memory: %v", b, unsafe.SliceData(b) == unsafe.SliceData(whole.Bytes()))
	}
	c.Put("k", "lead", cut, edited[2:], []byte("{[a,b,C"), "", 7)
	if p := c.GetPartial("k", "lead", msgs); p == nil || string(p.Bytes()) != "{[a,b" || string(whole.Bytes()) != kept {
		t.Fatalf("after a Put on a cut, GetPartial of the old messages = %+v; the old prefix %q", p, whole.Bytes())
	}
	for name, got := range map[string]*Prefix{
		"another lead":             c.GetPartial("k", "other", msgs),
		"the first message edited": c.GetPartial("k", "lead", []history.Message{text(history.User, "A")}),
		"another conversation":     c.GetPartial("j", "lead", msgs),
	} {
		if got != nil {
			t.Errorf("%s: given %+v", name, got)
		}
	}
	c.Put("k", "lead", nil, msgs, []byte(kept), "")
	if p := c.GetPartial("k", "lead", edited); p != nil {
		t.Errorf("a prefix kept without ends was cut: %+v", p)
	}
	if p := c.GetPartial("k", "lead", msgs); p == nil || p.Len() != 3 {
		t.Errorf("a prefix kept without ends, every message holding: %+v", p)
	}
}

// A first body's keys (40 bytes a message: 120,000 messages make 4.8 MB
// of them) are made in huge pages while a run's start asks for them
// (internal/hugepage).
func TestAFirstPrefixsKeysAreInHugePagesWhileAllowed(t *testing.T) {
	msgs := make([]history.Message, 120000)
	for i := range msgs {
		msgs[i] = history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "x"}}}
	}
	var c Cache
	hugepage.Allow()
	defer hugepage.Stop()
	c.Put("conv", "", nil, msgs, []byte("body"), history.User)
	ok, err := hugepage.Advised(c.m["conv"].p.keys)
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skip(err) // the kernel's setting: nothing is advised here
	}
	if err != nil || !ok {
		t.Fatalf("the prefix's keys are not advised for huge pages (%v)", err)
	}
}
