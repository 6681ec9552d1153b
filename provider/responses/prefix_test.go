package responses

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/internal/prefix"
	"github.com/myelin-run/myelin/provider"
)

// conversations is what a caller of bodyWith does between requests, one
// op at a time: conversations grow, views edit and drop messages, the
// head (model, instructions, tools) and settings change, the caller
// switches conversation. Each op leaves req ready to send; stored Parts
// are never changed in place (contract §7), the caller's Tools may be.
type conversations struct {
	t     testing.TB
	n     int // a counter that makes each new text its own
	key   string
	convs map[string][]history.Message
	req   provider.Request
	cfg   Config
	stm   bool
}

func newConversations(t testing.TB) *conversations {
	c := &conversations{t: t, convs: map[string][]history.Message{}}
	c.req = sampleRequest()
	c.key = c.req.CacheKey
	c.convs[c.key] = c.req.Messages
	c.stm = true
	return c
}

// opNames name the ops of do, for a failure's message.
var opNames = []string{
	"a round", "a user text", "a record", "a message of nothing", "a view's copy of a message", "a view's edit of a message",
	"a dropped message", "other instructions", "another model", "a tool edited in place", "a tool more or fewer",
	"another conversation", "other settings", "no conversation key", "reasoning that led to nothing", "a copy of the messages",
}

// do applies op (modulo the number of ops) to c.
func (c *conversations) do(op byte) {
	c.n++
	msgs := c.convs[c.key]
	text := fmt.Sprintf("text %d <&> \"é\"", c.n)
	switch int(op) % len(opNames) {
	case 0:
		id := fmt.Sprintf("call_%d", c.n)
		msgs = append(msgs,
			history.Message{Role: history.Assistant, Parts: []history.Part{
				Reasoning([]string{text}, nil, "enc"+text, true),
				{Type: history.TextPart, Text: text},
				{Type: history.ToolCallPart, CallID: id, Name: "workspace--read", Input: json.RawMessage(`{"path":"a.txt"}`)},
			}},
			history.Message{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: id, Text: text}}})
	case 1:
		msgs = append(msgs, history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: text}}})
	case 2:
		msgs = append(msgs, history.Message{Role: history.Context, Parts: []history.Part{{Type: history.TextPart, Text: "a record"}}})
	case 3:
		msgs = append(msgs, history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart}}})
	case 4, 5:
		if len(msgs) == 0 {
			break
		}
		msgs = slices.Clone(msgs)
		i := c.n % len(msgs)
		parts := slices.Clone(msgs[i].Parts)
		if op%2 == 1 && len(parts) > 0 {
			parts[0].Text += " [cleared]"
		}
		msgs[i].Parts = parts
	case 6:
		if len(msgs) > 0 {
			msgs = msgs[:len(msgs)-1]
		}
	case 7:
		c.req.System = []string{"", "You are terse.", "You are kind."}[c.n%3]
	case 8:
		c.req.Model = []string{"gpt-test", "gpt-other"}[c.n%2]
	case 9:
		if len(c.req.Tools) > 0 {
			c.req.Tools[0].Description = text // the caller's slice, edited in place
		}
	case 10:
		if c.n%2 == 0 && len(c.req.Tools) > 0 {
			c.req.Tools = c.req.Tools[:len(c.req.Tools)-1]
		} else {
			c.req.Tools = append(c.req.Tools, provider.Tool{Name: fmt.Sprintf("t%d", c.n), Description: text})
		}
	case 11:
		c.key = fmt.Sprintf("conv-%d", c.n%(prefix.MaxConversations+3))
		msgs = c.convs[c.key]
	case 12:
		c.cfg = []Config{{}, {NoEncryptedReasoning: true}, {ReasoningEffort: "low", ReasoningSummary: "auto"}}[c.n%3]
		c.stm = c.n%2 == 0
	case 13:
		c.key = ""
	case 14:
		msgs = append(msgs, history.Message{Role: history.Assistant, Parts: []history.Part{Reasoning([]string{text}, nil, "enc", true)}})
	case 15:
		msgs = slices.Clone(msgs)
	}
	c.convs[c.key] = msgs
	c.req.Messages = msgs
	c.req.CacheKey = c.key
}

// check fails c.t when bodyWith with cache gives other bytes than Body,
// then gives the body back (Prefixes.Release) unless it stands for one
// that failed.
func (c *conversations) check(cache *kept, ops []byte) {
	c.t.Helper()
	want, werr := Body(c.req, c.cfg, c.stm)
	got, gerr := bodyWith(c.req, c.cfg, c.stm, cache)
	if (werr == nil) != (gerr == nil) || string(got) != string(want) {
		var names []string
		for _, op := range ops {
			names = append(names, opNames[int(op)%len(opNames)])
		}
		c.t.Fatalf("after %q:\n got %s (%v)\nwant %s (%v)", names, got, gerr, want, werr)
	}
	if c.n%3 != 2 { // most bodies answered and given back, as Complete does; not all
		cache.prefixes.Release(c.req.CacheKey, got)
	}
}

// run applies ops one by one, checking the body after each.
func runConversations(t testing.TB, ops []byte) {
	c, cache := newConversations(t), &kept{}
	c.check(cache, nil)
	for i, op := range ops {
		c.do(op)
		c.check(cache, ops[:i+1])
	}
}

var conversationCases = [][]byte{
	{0, 0, 0, 0, 0, 0},                      // a tool loop
	{0, 15, 0, 15, 0},                       // the same messages in a new slice
	{0, 4, 0, 4, 4, 0},                      // a view's copies of stored messages
	{0, 5, 0, 5, 0, 0},                      // a view's edits
	{0, 0, 6, 0, 6, 6, 1, 0},                // messages dropped, then others in their place
	{2, 0, 2, 3, 0, 3, 14, 0},               // records, and messages that send nothing
	{6, 6, 6, 3, 3, 0, 2, 0},                // a conversation whose first messages send nothing
	{0, 7, 0, 8, 0, 9, 0, 10, 0, 10, 10, 0}, // the head changes
	{0, 11, 0, 11, 0, 11, 0, 11, 0, 11, 0, 11, 0, 11, 0, 11, 0, 11, 0, 11, 0, 11, 0, 11, 0}, // more conversations than are kept
	{0, 12, 0, 12, 0, 12, 0}, // settings
	{0, 13, 0, 0, 11, 0, 13}, // no key
	{1, 1, 14, 0, 14, 14, 1}, // reasoning that led to nothing
}

func TestCachedBodiesAreBodysBytes(t *testing.T) {
	for _, ops := range conversationCases {
		runConversations(t, ops)
	}
}

// A tool loop's next body starts from the one before: every message the
// last request had is taken from the prefix; a tool edited in place
// gives another head, which no prefix is kept after.
func TestAToolLoopsNextBodyTakesTheLastOnesMessagesFromItsPrefix(t *testing.T) {
	c, cache := newConversations(t), &kept{}
	taken := func() int {
		lead, err := cache.heads.of(c.req)
		if err != nil {
			t.Fatal(err)
		}
		if pre := cache.prefixes.GetPartial(c.key, lead, c.req.Messages); pre != nil {
			return pre.Len()
		}
		return 0
	}
	for range 5 {
		c.check(cache, nil)
		sent := len(c.req.Messages)
		c.do(0)
		if n := taken(); n != sent {
			t.Fatalf("%d messages taken of %d sent", n, sent)
		}
	}
	c.do(9)
	if n := taken(); n != 0 {
		t.Fatalf("a tool edited in place: %d messages taken", n)
	}
}

// A view's edit of a message in the middle of a conversation takes the
// messages before it from the prefix, and encodes it and those after.
func TestAnEditInTheMiddleTakesTheMessagesBeforeIt(t *testing.T) {
	c, cache := newConversations(t), &kept{}
	for range 4 {
		c.do(0)
	}
	c.check(cache, nil)
	lead, err := cache.heads.of(c.req)
	if err != nil {
		t.Fatal(err)
	}
	edited := slices.Clone(c.req.Messages)
	i := len(edited) / 2
	edited[i].Parts = []history.Part{{Type: history.ToolResultPart, CallID: "x", Text: "[cleared]"}}
	c.req.Messages = edited
	pre := cache.prefixes.GetPartial(c.key, lead, edited)
	if pre == nil || pre.Len() != i {
		t.Fatalf("a prefix of %v, want one of the %d messages before the edit", pre, i)
	}
	c.check(cache, []byte{5})
}

func TestAToolWhoseSchemaIsNotAnObjectIsAnErrorWithACacheToo(t *testing.T) {
	c, cache := newConversations(t), &kept{}
	c.check(cache, nil)
	c.req.Tools = []provider.Tool{{Name: "bad", InputSchema: json.RawMessage(`[]`)}}
	c.check(cache, []byte{10})
}

// FuzzCachedBodiesAreBodysBytes holds bodyWith with a cache to Body over
// any sequence of ops.
func FuzzCachedBodiesAreBodysBytes(f *testing.F) {
	for _, ops := range conversationCases {
		f.Add(ops)
	}
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 64 {
			ops = ops[:64]
		}
		runConversations(t, ops)
	})
}
