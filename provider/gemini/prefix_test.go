package gemini

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/result"
)

// checkKept fails t unless the body the kept bytes give for req is the
// one Body gives.
func checkKept(t testing.TB, c *keptBodies, req provider.Request, o Options) []byte {
	t.Helper()
	want, wantErr := Body(req, o)
	got, err := bodyWith(req, o, c)
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("error %v, Body's %v", err, wantErr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the kept bytes gave\n%s\nBody gives\n%s", got, want)
	}
	return got
}

// round appends to req an answer of n calls (signed, the ids taken from
// ids) and their results, as the agent stores a tool round.
func round(req *provider.Request, r, n int, name string) {
	calls := make([]history.Part, n)
	results := make([]history.Part, n)
	for k := range n {
		id := fmt.Sprintf("call_%d_%d", r, k)
		calls[k] = history.Part{Type: history.ToolCallPart, CallID: id, Name: name, Input: json.RawMessage(`{}`), Wire: "gemini", Signature: sig1}
		results[k] = history.Part{Type: history.ToolResultPart, CallID: id, Text: "ok <&> \u2028"}
	}
	req.Messages = append(req.Messages, history.Message{Role: history.Assistant, Parts: calls},
		history.Message{Role: history.User, Parts: results})
}

// conversation is the sample request of conversation "conv" after rounds
// rounds of calls calls, each request's body built on c and checked.
func conversation(t testing.TB, c *keptBodies, rounds, calls int) provider.Request {
	t.Helper()
	req := sampleRequest()
	req.CacheKey = "conv"
	for r := range rounds {
		round(&req, r, calls, "noop--run")
		checkKept(t, c, req, Options{})
	}
	return req
}

// Every body built on kept bytes is Body's, through every change a
// conversation and its settings go through; also when each body is given
// back once checked, as Complete gives back an answered one, and the
// next is written into its memory.
func TestKeptBytesAreBodysBytes(t *testing.T) {
	for _, givenBack := range []bool{false, true} {
		keptBytesAreBodysBytes(t, givenBack)
	}
}

func keptBytesAreBodysBytes(t *testing.T, givenBack bool) {
	c := &keptBodies{}
	req := sampleRequest()
	req.CacheKey = "conv"
	o := Options{}
	check := func() {
		t.Helper()
		got := checkKept(t, c, req, o)
		if givenBack {
			c.release(req, got)
		}
	}
	check()
	for r := range 6 {
		round(&req, r, 3, "workspace--read")
		check()
		if pre := c.prefixes.Kept("conv"); pre == nil || pre.Len() != len(req.Messages)-1 || c.tail == nil {
			t.Fatalf("round %d: nothing kept for the next request: %+v", r, c.prefixes.Kept("conv"))
		}
	}
	steps := []struct {
		name string
		edit func()
	}{
		{"a result cleared in a view (new Parts, other text)", func() {
			m := &req.Messages[4]
			m.Parts = slices.Clone(m.Parts)
			m.Parts[0].Text = "[cleared]"
		}},
		{"the same Parts copied (new address, same fields)", func() {
			m := &req.Messages[2]
			m.Parts = slices.Clone(m.Parts)
		}},
		{"a record inserted", func() {
			req.Messages = slices.Insert(req.Messages, 3, history.Message{Role: history.Context, Edit: &history.Edit{}})
		}},
		{"a prompt after results: joins their content", func() {
			req.Messages = append(req.Messages, history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "and then?"}}})
		}},
		{"an answer with images in the results, on a model that takes them", func() {
			req.Model = "gemini-3-pro"
			round(&req, 90, 2, "look")
			last := &req.Messages[len(req.Messages)-1]
			last.Parts[1].Images = []result.Image{{MIMEType: "image/png", Data: []byte("\x89PNG")}}
		}},
		{"back to a model that takes them after the responses", func() { req.Model = "gemini-2.5-flash" }},
		{"a reused call id naming another function", func() {
			req.Messages = append(req.Messages,
				history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.ToolCallPart, CallID: "call_0_0", Name: "other"}}},
				history.Message{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: "call_0_0", Text: "x"}}})
		}},
		{"a result whose call is in no message", func() {
			req.Messages = append(req.Messages, history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: "hm"}}},
				history.Message{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: "gone", Text: "x"}}})
		}},
		{"the history cut back and gone another way", func() {
			req.Messages = append(slices.Clip(req.Messages[:len(req.Messages)-1]),
				history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: "instead"}}})
		}},
		{"the system instruction changed", func() { req.System = "You are verbose." }},
		{"the token limit changed", func() { req.MaxTokens = 99 }},
		{"thoughts asked for", func() { o.Thoughts = true }},
		{"a tool added", func() {
			req.Tools = append(slices.Clip(req.Tools), provider.Tool{Name: "x", Description: "d", InputSchema: json.RawMessage(`{ "type" : "object" }`)})
		}},
		{"a tool's schema edited in place", func() { req.Tools[len(req.Tools)-1].InputSchema[3] = 'T' }},
		{"a tool's description changed", func() { req.Tools[0].Description = "Read." }},
		{"a tool whose schema is not JSON", func() { req.Tools[0].InputSchema = json.RawMessage(`{`) }},
		{"the tools fixed again", func() { req.Tools = sampleRequest().Tools }},
		{"another conversation", func() { req.CacheKey = "other" }},
		{"no conversation named", func() { req.CacheKey = "" }},
	}
	for _, s := range steps {
		s.edit()
		check()
		check() // and the request after, as it is
		round(&req, len(req.Messages), 2, "workspace--read")
		check()
		if t.Failed() {
			t.Fatalf("after %s (bodies given back: %v)", s.name, givenBack)
		}
	}
}

// TestTheNextRoundEncodesOnlyWhatIsNew pins that the kept prefix is used:
// a round's request encodes its last results, the answer and their
// results, whatever the conversation's length.
func TestTheNextRoundEncodesOnlyWhatIsNew(t *testing.T) {
	c := &keptBodies{}
	req := conversation(t, c, 20, 10)
	pre := c.prefixes.Kept("conv")
	if pre == nil {
		t.Fatal("nothing kept")
	}
	// Stored Parts never change; these do, in place, so that encoding
	// them again would show.
	req.Messages[0].Parts[0].Text = "changed"
	round(&req, 20, 10, "noop--run")
	got, err := bodyWith(req, Options{}, c)
	if err != nil || !bytes.HasPrefix(got, pre.Bytes()) || bytes.Contains(got, []byte("changed")) {
		t.Fatalf("err %v; the request did not begin with the kept bytes:\n%s", err, got)
	}
	if n := c.prefixes.Kept("conv").Len(); n != len(req.Messages)-1 {
		t.Fatalf("kept %d messages for the next request, not %d", n, len(req.Messages)-1)
	}
}

// FuzzKeptBytesAreBodysBytes drives a conversation by the input — each
// byte an edit: a message appended, Parts replaced as a view does, a
// record, the model or the settings changed, the history cut — with
// texts, ids and names from the input, and holds every request's kept
// bytes to Body's.
func FuzzKeptBytesAreBodysBytes(f *testing.F) {
	f.Add([]byte("\x00\x01\x02\x01\x02\x05\x01\x02\x03\x04\x01\x02"), "a <b> & \"c\"\n")
	f.Add([]byte("\x01\x02\x01\x02\x06\x01\x02\x07\x08\x01\x02\x09\x00\x00\x01"), "\u2028\xff")
	f.Add([]byte("\x01\x02\x01\x02\x01\x02\x0a\x01\x02\x0b\x01\x0c\x02"), "é")
	f.Fuzz(func(t *testing.T, ops []byte, text string) {
		if len(ops) > 64 {
			ops = ops[:64]
		}
		c := &keptBodies{}
		req := provider.Request{Model: "gemini-2.5-flash", MaxTokens: 10, CacheKey: "k", Tools: sampleRequest().Tools}
		o := Options{}
		add := func(role history.Role, parts ...history.Part) {
			req.Messages = append(req.Messages, history.Message{Role: role, Parts: parts})
		}
		for i, op := range ops {
			id := fmt.Sprint("id", int(op>>4)%4)
			switch op % 13 {
			case 0:
				add(history.User, history.Part{Type: history.TextPart, Text: text})
			case 1:
				add(history.Assistant, history.Part{Type: history.ToolCallPart, CallID: id, Name: text, Input: json.RawMessage(`{"a":1}`), Wire: "gemini", Signature: text})
			case 2:
				add(history.User, history.Part{Type: history.ToolResultPart, CallID: id, Text: text, IsError: op&16 != 0,
					Images: []result.Image{{MIMEType: text, Data: []byte(text)}}})
			case 3:
				add(history.Context)
			case 4:
				add(history.Assistant, history.Part{Type: history.ReasoningPart, Wire: "gemini", Raw: json.RawMessage(`{"text":"t","thought":true}`)},
					history.Part{Type: history.TextPart, Text: text, Wire: "gemini", Signature: id})
			case 5:
				if n := len(req.Messages); n > 0 {
					m := &req.Messages[int(op>>4)%n]
					m.Parts = slices.Clone(m.Parts)
					for j := range m.Parts {
						m.Parts[j].Text += text
					}
				}
			case 6:
				if n := len(req.Messages); n > 0 {
					req.Messages = slices.Clip(req.Messages[:int(op>>4)%n])
				}
			case 7:
				if req.Model == "gemini-3-pro" {
					req.Model = "gemini-2.5-flash"
				} else {
					req.Model = "gemini-3-pro"
				}
			case 8:
				req.System = text
			case 9:
				o.Thoughts = !o.Thoughts
			case 10:
				req.Tools = append(slices.Clip(req.Tools), provider.Tool{Name: text, Description: text, InputSchema: json.RawMessage(`{"d":` + fmt.Sprintf("%q", text) + `}`)})
			case 11:
				add(history.Assistant, history.Part{Type: history.TextPart})
			case 12:
				add(history.User, history.Part{Type: history.ToolResultPart, CallID: "id", Text: text})
			}
			want, wantErr := Body(req, o)
			got, err := bodyWith(req, o, c)
			if (err == nil) != (wantErr == nil) || !bytes.Equal(got, want) {
				t.Fatalf("after edit %d (%d): error %v, Body's %v\n got %s\nwant %s", i, op%13, err, wantErr, got, want)
			}
		}
	})
}

// TestRequestsOfOneConversationBuiltAtOnceGetBodysBytes builds the bodies
// of one conversation's requests from several goroutines at once, each
// its own length of the conversation, so that they take, grow and replace
// the same kept prefix (run with -race).
func TestRequestsOfOneConversationBuiltAtOnceGetBodysBytes(t *testing.T) {
	c := &keptBodies{}
	full := conversation(t, &keptBodies{}, 12, 3)
	done := make(chan error)
	for g := range 4 {
		go func() {
			var err error
			for n := 1; n <= len(full.Messages) && err == nil; n++ {
				req := full
				req.Messages = full.Messages[:len(full.Messages)-((n+g)%len(full.Messages))]
				want, _ := Body(req, Options{})
				got, berr := bodyWith(req, Options{}, c)
				if berr != nil || !bytes.Equal(got, want) {
					err = fmt.Errorf("%d messages: error %v, or not Body's bytes:\n%s\n%s", len(req.Messages), berr, got, want)
				}
			}
			done <- err
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// Over loopback, a conversation's next body is written into the memory
// of the answered one before it, and every body is Body's.
func TestCompleteWritesTheNextBodyIntoTheAnsweredOnesMemory(t *testing.T) {
	srv := providertest.NewGemini(t)
	base := sampleRequest()
	providertest.CheckBodiesInPlace(t, srv, newWire(t, srv, Config{}), base, func(req provider.Request) ([]byte, error) {
		return Body(req, Options{})
	})
}
