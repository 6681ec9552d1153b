package agent

// More tests of marks (issue 34 point 4 slice 2), written by the review
// of its first commits: each failed, or caught a mutant nothing else did.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/historytest"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/window"
)

// The facts a turn computes when it moves a mark on from a state it read
// from an earlier mark (factsAt of a tail: settings and records carried
// from the first mark's facts, plus those of the tail before the new
// place) are byte for byte those computed from the whole list. No test of
// the commit computes factsAt over a state whose From is past 0: replacing
// st.settings or st.records by their zero in factsAt passes every test of
// ./agent (mutants M4, M5 of the review).
func TestFactsMovedOnFromAMarkedTailAreTheWholeLists(t *testing.T) {
	compared := 0
	for seed := int64(1); seed <= 150; seed++ {
		stored := historytest.Generated(seed)
		for n1 := 1; n1 <= len(stored); n1 += 3 {
			whole1 := wholeState(stored[:n1])
			f1 := markFrom(&whole1, window.GatherTail(whole1.tail))
			if f1 == 0 {
				continue
			}
			facts1, err := json.Marshal(whole1.factsAt(f1))
			if err != nil {
				t.Fatal(err)
			}
			m1 := markOf(f1, facts1)
			for n2 := n1 + 1; n2 <= len(stored); n2++ {
				st, _, ok := (&Agent{}).markedState("c", m1, stored[f1:n2])
				if !ok {
					continue
				}
				f2 := markFrom(&st, window.GatherTail(st.tail))
				if f2 <= f1 {
					continue
				}
				got, err := json.Marshal(st.factsAt(f2))
				if err != nil {
					t.Fatal(err)
				}
				all := wholeState(stored[:n2])
				want, err := json.Marshal(all.factsAt(f2))
				if err != nil {
					t.Fatal(err)
				}
				ref, err := stateOf(stored[:n2], f2, false)
				if err != nil {
					t.Fatal(err)
				}
				if tf := st.factsAt(f2); tf.Records != ref.records || !reflect.DeepEqual(tf.Settings, ref.settings) {
					t.Fatalf("seed %d: a mark moved on from %d to %d counts %d records before it, settings %+v; stateOf: %d, %+v", seed, f1, f2, tf.Records, tf.Settings, ref.records, ref.settings)
				}
				if string(got) != string(want) {
					t.Fatalf("seed %d: a mark at %d (of %d) moved on to %d (of %d) from its tail has facts\n%s\nfrom the whole list\n%s", seed, f1, n1, f2, n2, got, want)
				}
				compared++
			}
		}
	}
	if compared < 200 {
		t.Fatalf("only %d marks moved on from a tail", compared)
	}
}

// A mark past leastFrom, even with facts true of the messages before it,
// is never used: some place a reader needs stands before it, and
// markedState sees that. (It once used such marks when the tail held an
// answer whose usage counts no request while the last counted answer, and
// the view it counted, stood before From: the turn then sized the request
// with an uncalibrated ratio where the whole list gives a calibrated one.)
func TestAMarkPastLeastFromIsNeverUsed(t *testing.T) {
	tried, accepted, wrong := 0, 0, 0
	reasons := map[string]int{}
	var first string
	for seed := int64(1); seed <= 200; seed++ {
		stored := historytest.Generated(seed)
		a := &Agent{Model: "model-0"}
		now := a.settings(sizing{conv: history.Conversation{System: "system"}, digest: "tools"})
		for n := 1; n <= len(stored); n++ {
			least, _ := leastFrom(stored[:n], false)
			whole := wholeState(stored[:n])
			for from := least + 1; from <= n; from++ {
				facts, err := json.Marshal(whole.factsAt(from))
				if err != nil {
					t.Fatal(err)
				}
				tried++
				st, _, ok := (&Agent{}).markedState("c", markOf(from, facts), stored[from:n])
				if !ok {
					continue
				}
				accepted++
				_, why0 := leastFrom(stored[:n], false)
				reasons[strings.SplitN(why0, " (", 2)[0][:40]]++
				var got, want []any
				func() {
					defer func() {
						if r := recover(); r != nil {
							got = []any{fmt.Sprint("panic: ", r)}
						}
					}()
					got = startOf(t, &st, now, false)
				}()
				want = startOf(t, &whole, now, false)
				if !reflect.DeepEqual(got, want) {
					wrong++
					if first == "" {
						_, why := leastFrom(stored[:n], false)
						for i := range got {
							if i >= len(want) || !reflect.DeepEqual(got[i], want[i]) {
								w := any(nil)
								if i < len(want) {
									w = want[i]
								}
								first = fmt.Sprintf("seed %d, %d messages, leastFrom %d (%s), a mark at %d is used: reader answer %d is\n%+v\nover the whole list\n%+v", seed, n, least, why, from, i, got[i], w)
								break
							}
						}
					}
				}
			}
		}
	}
	if tried < 1000 {
		t.Fatalf("only %d marks past leastFrom tried", tried)
	}
	if accepted > 0 {
		t.Fatalf("%d of %d marks past leastFrom were used (%v), %d of them answering otherwise than the whole list; the first: %s", accepted, tried, reasons, wrong, first)
	}
}

// failingMarks is a Memory whose SetMark always fails (a store whose marks
// table is missing, a read-only replica, ...).
type failingMarks struct{ *history.Memory }

func (failingMarks) SetMark(context.Context, string, history.Mark) error {
	return errors.New("no marks here")
}

// A store that cannot keep a mark costs a later read its speed, and the
// turn a notice: one. keepMark says so again at every fit, so a turn of
// many rounds on a summarised conversation says it once per request.
func TestAMarkThatCannotBeKeptIsSaidOnceATurn(t *testing.T) {
	stored := summarisedConversation()
	ctx := context.Background()
	s := failingMarks{&history.Memory{}}
	storeConversation(t, s, stored)
	const rounds = 5
	a := roundsAgent(t, s, rounds, 100)
	notices := 0
	if _, err := a.Turn(ctx, "c", "go on", func(e Event) {
		if e.Kind == Notice && strings.Contains(e.Text, "could not be kept") {
			notices++
		}
	}); err != nil {
		t.Fatal(err)
	}
	if notices != 1 {
		t.Fatalf("a turn of %d requests said %d times that the mark could not be kept; want once", rounds+1, notices)
	}
}

// A mark's facts carry window.Before, whose Summary is the summary in
// force among the records before From — at a From the agent sets, always
// one that a record of the tail supersedes (the summary in force now, or
// at the last counted answer, has its record in the tail), so its text is
// never sent. It is kept whole all the same: a mark over a conversation
// summarised twice stores, and every read decodes, the older summary's
// whole text (SummaryWords asks for ~13,500 words under a 200k window).
func TestAMarksFactsHoldNoSupersededSummaryText(t *testing.T) {
	old := strings.Repeat("older summary words ", 500) // ~10 KB
	var stored []history.Message
	add := func(m ...history.Message) { stored = append(stored, m...) }
	prompt := func(s string) history.Message {
		return history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: s}}}
	}
	answer := func(s string, in int) history.Message {
		return history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: s}}, Usage: &history.Usage{Input: in, Output: 1}}
	}
	for i := range 10 {
		add(prompt(fmt.Sprint("p", i)), answer(fmt.Sprint("a", i), 100+i))
	}
	add(history.Message{Role: history.Context, Edit: &history.Edit{Summary: &history.Summary{Through: 6, Text: old}}})
	for i := 10; i < 20; i++ {
		add(prompt(fmt.Sprint("p", i)), answer(fmt.Sprint("a", i), 100+i))
	}
	add(history.Message{Role: history.Context, Edit: &history.Edit{Summary: &history.Summary{Through: 30, Text: "newer summary"}}})
	add(prompt("p20"), answer("a20", 500))
	whole := wholeState(stored)
	from := markFrom(&whole, window.GatherTail(whole.tail))
	if from != 30 {
		t.Fatalf("the mark is at %d; want 30", from)
	}
	facts, err := json.Marshal(whole.factsAt(from))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(facts), "older summary words") {
		t.Fatalf("a mark at %d keeps %d bytes of facts, the older summary's whole text (superseded by the record at %d) among them", from, len(facts), len(stored)-3)
	}
}

// A mark set at leastFrom over n messages
// stays true after ANY later append — not only those a turn writes. After
// a mark, append messages drawn at random from what anyone may append
// (summaries ending before the mark, at it, past the end; clearings of
// places before the mark, in the tail, to come; records with no edit;
// answers without usage or counting nothing; prompts; results; settings),
// and hold every reader's answer over the marked tail to the whole list's.
func TestAMarkHoldsThroughAnyLaterAppend(t *testing.T) {
	checked, refused := 0, 0
	for seed := int64(1); seed <= 150; seed++ {
		stored := historytest.Generated(seed)
		a := &Agent{Model: "model-0"}
		now := a.settings(sizing{conv: history.Conversation{System: "system"}, digest: "tools"})
		r := rand.New(rand.NewSource(seed * 7))
		for n := 1; n <= len(stored); n += 1 + r.Intn(4) {
			base := stored[:n:n]
			whole := wholeState(base)
			from := markFrom(&whole, window.GatherTail(whole.tail))
			if from == 0 {
				continue
			}
			facts, _ := json.Marshal(whole.factsAt(from))
			m := markOf(from, facts)
			msgs := base
			for k := 0; k < 8; k++ {
				msgs = append(msgs, anyLaterMessage(r, msgs, from))
				st, _, ok := (&Agent{}).markedState("c", m, msgs[from:])
				if !ok {
					refused++
					continue
				}
				all := wholeState(msgs)
				var got []any
				func() {
					defer func() {
						if p := recover(); p != nil {
							t.Fatalf("seed %d: a mark at %d of %d, %d appended: a reader panicked: %v", seed, from, n, k+1, p)
						}
					}()
					got = startOf(t, &st, now, false)
				}()
				want := startOf(t, &all, now, false)
				if !reflect.DeepEqual(got, want) {
					for i := range got {
						if !reflect.DeepEqual(got[i], want[i]) {
							t.Fatalf("seed %d: a mark at %d of %d, then %+v appended: reader answer %d is\n%+v\nover the whole list\n%+v", seed, from, n, msgs[n:], i, got[i], want[i])
						}
					}
				}
				checked++
			}
		}
	}
	if checked < 1000 {
		t.Fatalf("only %d marked reads after later appends checked (%d refused)", checked, refused)
	}
}

// anyLaterMessage is a message anyone might append to msgs, whose mark is
// at from.
func anyLaterMessage(r *rand.Rand, msgs []history.Message, from int) history.Message {
	end := len(msgs)
	text := func(s string) []history.Part { return []history.Part{{Type: history.TextPart, Text: s}} }
	switch r.Intn(11) {
	case 0:
		return history.Message{Role: history.User, Parts: text("a prompt")}
	case 1:
		return history.Message{Role: history.Assistant, Parts: text("no usage")}
	case 2:
		return history.Message{Role: history.Assistant, Parts: text("counts nothing"), Usage: &history.Usage{Output: 3}}
	case 3:
		return history.Message{Role: history.Assistant, Parts: text("counted"), Usage: &history.Usage{Input: 1 + r.Intn(9000), Output: 3}}
	case 4:
		return history.Message{Role: history.Assistant, Parts: text("settings"), Usage: &history.Usage{Input: 77, Output: 1}, Settings: &history.Settings{Model: "model-9", System: "s", Tools: "t"}}
	case 5:
		return history.Message{Role: history.Context}
	case 6: // a summary ending anywhere: before the mark, at it, in the tail, past the end
		through := r.Intn(end + 5)
		return history.Message{Role: history.Context, Edit: &history.Edit{Summary: &history.Summary{Through: through, Text: fmt.Sprint("summary through ", through)}}}
	case 7: // a clearing of any place, before the mark too
		at := r.Intn(end + 3)
		return history.Message{Role: history.Context, Edit: &history.Edit{Cleared: []history.Cleared{{Msg: at, CallID: "call-0", Text: "[cleared]"}}}}
	case 8:
		return history.Message{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: "call-x", Text: "result"}}}
	case 9:
		return history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.ToolCallPart, CallID: "call-x", Name: "t", Input: json.RawMessage(`{}`)}}, Usage: &history.Usage{Input: 50, Output: 1}}
	}
	_ = from
	return history.Message{Role: history.Context, Edit: &history.Edit{Summary: &history.Summary{Through: end, Text: "summary of all"}}}
}

func markPrompt(s string) history.Message {
	return history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: s}}}
}

func markAnswer(s string, in int) history.Message {
	m := history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: s}}}
	if in > 0 {
		m.Usage = &history.Usage{Input: in, Output: 1}
	}
	return m
}

// A summary record that ends after itself (no turn writes one; a Tail must
// read right all the same) may be in force at a mark past its record: the
// mark's facts keep its text, and the marked read's request sends it as
// the whole list's does.
func TestASummaryEndingPastItselfKeepsItsTextInAMark(t *testing.T) {
	var stored []history.Message
	for i := range 5 {
		stored = append(stored, markPrompt(fmt.Sprint("p", i)), markAnswer(fmt.Sprint("a", i), 100+i))
	}
	r := len(stored) // 10
	stored = append(stored, history.Message{Role: history.Context, Edit: &history.Edit{Summary: &history.Summary{Through: r + 1, Text: "THE SUMMARY TEXT"}}})
	stored = append(stored, markPrompt("p5"), markAnswer("a5", 300), markPrompt("p6"), markAnswer("a6", 400))
	whole := wholeState(stored)
	from := markFrom(&whole, window.GatherTail(whole.tail))
	least, _ := leastFrom(stored, false)
	if from != least {
		t.Fatalf("the mark is at %d; leastFrom says %d", from, least)
	}
	if from <= r {
		t.Fatalf("the mark at %d does not pass the record at %d: the test tests nothing", from, r)
	}
	facts, err := json.Marshal(whole.factsAt(from))
	if err != nil {
		t.Fatal(err)
	}
	st, g, ok := (&Agent{}).markedState("c", markOf(from, facts), stored[from:])
	if !ok {
		t.Fatal("the mark is refused: the test tests nothing")
	}
	got, want := g.View(), window.GatherTail(whole.tail).View()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("a mark at %d (facts %s) is used, and its request sends\n%+v\nwhere the whole list sends\n%+v", from, facts, got[0], want[0])
	}
	_ = st
}

// countingMarks counts SetMark, Marked and Messages on a Memory.
type countingMarks struct {
	*history.Memory
	sets, marked, whole *atomic.Int64
}

func (c countingMarks) SetMark(ctx context.Context, id string, m history.Mark) error {
	c.sets.Add(1)
	return c.Memory.SetMark(ctx, id, m)
}
func (c countingMarks) Marked(ctx context.Context, id string) (history.Mark, []history.Message, error) {
	c.marked.Add(1)
	return c.Memory.Marked(ctx, id)
}
func (c countingMarks) Messages(ctx context.Context, id string) ([]history.Message, error) {
	c.whole.Add(1)
	return c.Memory.Messages(ctx, id)
}

// A provider that reports no usage (or none counting its request): the
// mark set after a summary is used by the next reads, not refused and set
// again at every request (which cost each a Marked read, a whole read and
// a SetMark write: more than no mark at all).
func TestAProviderThatReportsNoUsageSetsTheMarkOnce(t *testing.T) {
	var stored []history.Message
	for i := range 10 {
		stored = append(stored, markPrompt(fmt.Sprint("p", i)), markAnswer(fmt.Sprint("a", i), 0))
	}
	stored = append(stored, history.Message{Role: history.Context, Edit: &history.Edit{Summary: &history.Summary{Through: 14, Text: "summary"}}})
	stored = append(stored, markPrompt("p10"), markAnswer("a10", 0))
	ctx := context.Background()
	var sets, marked, whole atomic.Int64
	s := countingMarks{&history.Memory{}, &sets, &marked, &whole}
	storeConversation(t, s, stored)
	const rounds = 5
	a := roundsAgent(t, s, rounds, 0)
	if _, err := a.Turn(ctx, "c", "go on", func(Event) {}); err != nil {
		t.Fatal(err)
	}
	m, _, _ := s.Memory.Marked(ctx, "c")
	if sets.Load() != 1 || whole.Load() != 0 || m.From == 0 {
		t.Fatalf("a turn of %d requests on a conversation whose provider reports no usage set the same mark %d times (at %d), each refused at the next read (%d whole reads after %d marked ones)", rounds+1, sets.Load(), m.From, whole.Load(), marked.Load())
	}
}

// flakyMarks fails its first SetMark only (a busy database, a dropped
// connection).
type flakyMarks struct {
	*history.Memory
	calls *atomic.Int64
}

func (f flakyMarks) SetMark(ctx context.Context, id string, m history.Mark) error {
	if f.calls.Add(1) == 1 {
		return fmt.Errorf("database is locked (transient)")
	}
	return f.Memory.SetMark(ctx, id, m)
}

// One transient SetMark failure does not stop the mark for the rest of
// the turn: once the place moves on, it is tried again and kept.
func TestAMarkThatFailedOnceIsKeptLaterInTheTurn(t *testing.T) {
	var stored []history.Message
	for i := range 10 {
		stored = append(stored, markPrompt(fmt.Sprint("p", i)), markAnswer(fmt.Sprint("a", i), 100+i))
	}
	stored = append(stored, history.Message{Role: history.Context, Edit: &history.Edit{Summary: &history.Summary{Through: 14, Text: "summary"}}})
	stored = append(stored, markPrompt("p10"), markAnswer("a10", 300))
	ctx := context.Background()
	var calls atomic.Int64
	s := flakyMarks{&history.Memory{}, &calls}
	storeConversation(t, s, stored)
	const rounds = 5
	a := roundsAgent(t, s, rounds, 400)
	if _, err := a.Turn(ctx, "c", "go on", func(Event) {}); err != nil {
		t.Fatal(err)
	}
	m, _, _ := s.Memory.Marked(ctx, "c")
	if m.From == 0 {
		t.Fatalf("after a turn of %d requests whose first SetMark alone failed (%d calls), no mark is kept", rounds+1, calls.Load())
	}
}

// roundsAgent is an agent on store s whose provider (a fake of the
// Anthropic wire) answers rounds rounds of one call to a tool that does
// nothing, then "done"; each answer's usage counts input tokens (none
// with input 0).
func roundsAgent(t *testing.T, s history.Store, rounds, input int) *Agent {
	t.Helper()
	w := testWires["anthropic"]
	srv := w.server(t)
	p, err := w.provider(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	reg := &tool.Registry{}
	if err := reg.Add(tool.MustFunc("noop--run", "Does nothing.", func(context.Context, struct{}) (any, error) { return "ok", nil })); err != nil {
		t.Fatal(err)
	}
	output := 0
	if input > 0 {
		output = 1
	}
	for r := range rounds {
		srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{{ID: fmt.Sprint("call_", r), Name: "noop--run", Input: `{}`}}, Input: input, Output: output})
	}
	srv.Push(providertest.Step{Text: "done", Input: input, Output: output})
	return &Agent{Provider: p, Store: s, Tools: reg, Model: "claude-test", ContextWindow: 1_000_000}
}

// countingFailingMarks is a Memory whose SetMark always fails, counting
// the calls by place.
type countingFailingMarks struct {
	*history.Memory
	mu     *sync.Mutex
	places map[int]int
}

func (c countingFailingMarks) SetMark(_ context.Context, _ string, m history.Mark) error {
	c.mu.Lock()
	c.places[m.From]++
	c.mu.Unlock()
	return errors.New("no marks here")
}

// A place whose mark cannot be kept is tried at most markTries times a
// turn, and said once: a store that refuses marks costs a turn of many
// requests two failing writes, not one a request.
func TestAFailingPlaceIsTriedAtMostMarkTriesTimesATurn(t *testing.T) {
	stored := summarisedConversation()
	ctx := context.Background()
	s := countingFailingMarks{&history.Memory{}, &sync.Mutex{}, map[int]int{}}
	storeConversation(t, s, stored)
	a := roundsAgent(t, s, 8, 100)
	notices := 0
	if _, err := a.Turn(ctx, "c", "go on", func(e Event) {
		if e.Kind == Notice && strings.Contains(e.Text, "could not be kept") {
			notices++
		}
	}); err != nil {
		t.Fatal(err)
	}
	if notices != 1 {
		t.Errorf("%d notices; want one", notices)
	}
	for p, n := range s.places {
		if n > markTries {
			t.Errorf("place %d tried %d times", p, n)
		}
	}
	if len(s.places) == 0 {
		t.Fatal("no SetMark at all")
	}
}

// A conversation of records alone whose summary ends past its end (no
// turn writes one) gets no mark past its end, and setting one does not
// panic: the mark is at most the count of messages stored.
func TestAMarkIsNeverPastTheEnd(t *testing.T) {
	stored := []history.Message{{Role: history.Context, Edit: &history.Edit{Summary: &history.Summary{Through: 5, Text: "ahead"}}}}
	st := wholeState(stored)
	g := window.GatherTail(st.tail)
	if from := markFrom(&st, g); from > len(stored) {
		t.Fatalf("the mark is at %d of %d messages", from, len(stored))
	}
	s := &history.Memory{}
	ctx := context.Background()
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "c", stored...); err != nil {
		t.Fatal(err)
	}
	var said []string
	(&Agent{Store: s}).keepMark(ctx, "c", &st, g, &markTry{}, false, func(e Event) { said = append(said, e.Text) })
	if len(said) > 0 {
		t.Fatalf("keeping the mark said %q", said)
	}
}
