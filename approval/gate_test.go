package approval

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/myelin-run/myelin/permission"
	"github.com/myelin-run/myelin/tool"
)

// fakeAsker answers every request with answer, or fails with err; it
// keeps the requests it was put.
type fakeAsker struct {
	answer Answer
	err    error
	mu     sync.Mutex
	asked  []Request
}

func (f *fakeAsker) Ask(ctx context.Context, r Request) (Answer, error) {
	f.mu.Lock()
	f.asked = append(f.asked, r)
	f.mu.Unlock()
	if f.err != nil {
		return Answer{}, f.err
	}
	return f.answer, nil
}

func (f *fakeAsker) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.asked)
}

func rules(t *testing.T, d permission.Decision, texts ...string) []permission.Rule {
	t.Helper()
	var out []permission.Rule
	for _, s := range texts {
		r, err := permission.ParseRule(s, d, "--"+d.String())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func question(name string, input string, readOnly bool) tool.Question {
	return tool.Question{Tool: &tool.Tool{Name: name, ReadOnly: readOnly}, Call: tool.Call{ID: "c1", Name: name, Input: json.RawMessage(input)}}
}

func sh(cmd string) tool.Question {
	in, _ := json.Marshal(map[string]string{"command": cmd})
	return question(permission.ShellTool, string(in), false)
}

var at = time.Date(2026, 12, 5, 11, 0, 0, 0, time.UTC)

// The table: rules × calls × what the person (or no one) answers → the
// record stored with the call, whether anyone was asked, and what the
// model reads of a denial.
func TestTheGateRecordsWhoDecidedEveryCall(t *testing.T) {
	user := append(rules(t, permission.Allow, "go test *", "workspace--write"), rules(t, permission.Deny, "rm *")...)
	for _, tc := range []struct {
		name     string
		q        tool.Question
		yes      bool
		asker    *fakeAsker // nil: no one can be asked
		decision string
		by       string
		answer   string
		rule     string // a prefix of the record's rule
		asked    bool
		denial   string // a part of the denial's text
	}{
		{name: "a read allowed by default", q: question("workspace--read", `{}`, true), decision: "allow", by: "default"},
		{name: "a tool allowed by a rule", q: question("workspace--write", `{}`, false), decision: "allow", by: "rule", rule: "allow workspace--write (--allow)"},
		{name: "a command allowed by a rule", q: sh("go test ./..."), decision: "allow", by: "rule", rule: "allow go test *"},
		{name: "a command denied by a rule", q: sh("make && rm -rf x"), asker: &fakeAsker{answer: Answer{Choice: AllowOnce}}, decision: "deny", by: "rule", rule: "deny rm *", denial: `"rm -rf x"`},
		{name: "asked and allowed once", q: sh("make"), asker: &fakeAsker{answer: Answer{Choice: AllowOnce}}, decision: "allow", by: "person", answer: "allow_once", asked: true},
		{name: "asked and allowed for the session", q: sh("make"), asker: &fakeAsker{answer: Answer{Choice: AllowSession}}, decision: "allow", by: "person", answer: "allow_session", rule: "allow make", asked: true},
		{name: "asked and denied with a reason", q: sh("make"), asker: &fakeAsker{answer: Answer{Choice: Deny, Reason: "not now"}}, decision: "deny", by: "person", answer: "deny", asked: true, denial: "Their reason: not now"},
		{name: "asked and denied without one", q: sh("make"), asker: &fakeAsker{answer: Answer{Choice: Deny}}, decision: "deny", by: "person", answer: "deny", asked: true, denial: "gave no reason"},
		{name: "an answer no one may give", q: sh("make"), asker: &fakeAsker{answer: Answer{Choice: "maybe"}}, decision: "deny", by: "person", answer: "maybe", asked: true, denial: `"maybe"`},
		{name: "asked and no answer in time", q: sh("make"), asker: &fakeAsker{err: ErrExpired}, decision: "deny", by: "timeout", asked: true, denial: "no answer came in time"},
		{name: "the asker has no one", q: sh("make"), asker: &fakeAsker{err: ErrNoOne}, decision: "deny", by: "nobody", asked: true, denial: "--allow make"},
		{name: "the asker fails", q: sh("make"), asker: &fakeAsker{err: errors.New("the pipe broke")}, decision: "deny", by: "nobody", asked: true, denial: "the pipe broke"},
		{name: "no asker", q: sh("go build ./... && make"), decision: "deny", by: "nobody", denial: "--allow 'go build ./...' --allow make"},
		{name: "no asker, a tool", q: question("github--create_issue", `{}`, false), decision: "deny", by: "nobody", denial: "--allow github--create_issue"},
		{name: "no asker, dynamic words", q: sh("make $TARGET"), decision: "deny", by: "nobody", denial: "No rule can allow it"},
		{name: "--yes", q: sh("make"), yes: true, decision: "allow", by: "yes"},
		{name: "--yes does not allow a deny", q: sh("rm x"), yes: true, decision: "deny", by: "rule"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &Gate{Policy: &permission.Policy{User: user, Yes: tc.yes}, UserFile: "/home/u/.config/myelin/permissions.json", Now: func() time.Time { return at }}
			if tc.asker != nil {
				g.Asker = tc.asker
			}
			r, err := g.Check(context.Background(), tc.q)
			if err != nil {
				t.Fatal(err)
			}
			rec := r.Record
			if rec.Decision != tc.decision || rec.By != tc.by || rec.Answer != tc.answer || !rec.At.Equal(at) {
				t.Errorf("record %+v, want decision %q by %q answer %q at %v", rec, tc.decision, tc.by, tc.answer, at)
			}
			if !strings.HasPrefix(rec.Rule, tc.rule) || (tc.rule == "" && rec.Rule != "" && rec.By != "rule") {
				t.Errorf("record's rule %q, want %q", rec.Rule, tc.rule)
			}
			if rec.Reason == "" {
				t.Error("the record gives no reason")
			}
			if r.Allowed() != (tc.decision == "allow") {
				t.Errorf("Allowed() = %v for decision %q", r.Allowed(), rec.Decision)
			}
			if asked := tc.asker != nil && tc.asker.count() > 0; asked != tc.asked {
				t.Errorf("asked a person: %v, want %v", asked, tc.asked)
			}
			if tc.denial != "" && !strings.Contains(r.Denial, tc.denial) {
				t.Errorf("the denial %q does not say %q", r.Denial, tc.denial)
			}
			if tc.decision == "allow" && r.Denial != "" {
				t.Errorf("an allowed call has a denial: %q", r.Denial)
			}
		})
	}
}

// The request a person is put says the call, its command line and the
// part that asked, why, and the rule a session or always answer adds.
func TestARequestSaysTheCallAndTheRuleAnAnswerWouldAdd(t *testing.T) {
	f := &fakeAsker{answer: Answer{Choice: AllowOnce}}
	g := &Gate{Policy: &permission.Policy{User: rules(t, permission.Allow, "git status")}, Asker: f}
	if _, err := g.Check(context.Background(), sh("git status && go vet ./...")); err != nil {
		t.Fatal(err)
	}
	r := f.asked[0]
	if r.Tool != permission.ShellTool || r.Command != "git status && go vet ./..." || r.Part != "go vet ./..." || r.Rule != "go vet ./..." || r.Reason == "" || !strings.HasPrefix(r.ID, "approval_") {
		t.Errorf("request %+v", r)
	}
}

// "Yes for this session" allows the same command again without asking,
// by "session", in that session only; "yes once" does not.
func TestASessionAnswerAllowsTheSameCallsOfThatSessionOnly(t *testing.T) {
	f := &fakeAsker{answer: Answer{Choice: AllowSession}}
	g := &Gate{Asker: f}
	one := WithSession(context.Background(), "conv-1")
	if r, _ := g.Check(one, sh("make build")); !r.Allowed() || r.Record.By != ByPerson {
		t.Fatalf("first call: %+v", r.Record)
	}
	r, _ := g.Check(one, sh("make build"))
	if !r.Allowed() || r.Record.By != BySession || f.count() != 1 {
		t.Errorf("the same call again: %+v, asked %d times, want allowed by session, asked once", r.Record, f.count())
	}
	if r, _ := g.Check(one, sh("make clean")); f.count() != 2 || r.Record.By != ByPerson {
		t.Errorf("another command was not asked: %+v", r.Record)
	}
	if _, _ = g.Check(WithSession(context.Background(), "conv-2"), sh("make build")); f.count() != 3 {
		t.Errorf("another session's call was not asked (asked %d times, want 3)", f.count())
	}
	once := &Gate{Asker: &fakeAsker{answer: Answer{Choice: AllowOnce}}}
	once.Check(one, sh("make"))
	if r, _ := once.Check(one, sh("make")); r.Record.By != ByPerson {
		t.Errorf("a yes-once answer was remembered: %+v", r.Record)
	}
}

// "Always" writes the rule to the user's file, and allows for the
// session; a command with dynamic words offers no rule and is allowed
// once only.
func TestAnAlwaysAnswerWritesTheRuleToTheUsersFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "myelin", "permissions.json")
	f := &fakeAsker{answer: Answer{Choice: AllowAlways}}
	g := &Gate{Asker: f, UserFile: file}
	if r, _ := g.Check(context.Background(), sh("go test ./...")); !r.Allowed() || r.Record.Answer != "allow_always" {
		t.Fatalf("record %+v", r.Record)
	}
	got, _, err := permission.ReadFile(file, false)
	if err != nil || len(got) != 1 || got[0].Text != "go test ./..." || got[0].Decision != permission.Allow {
		t.Fatalf("the user's file holds %+v (%v), want allow \"go test ./...\"", got, err)
	}
	if r, _ := g.Check(context.Background(), sh("go test ./...")); r.Record.By != BySession {
		t.Errorf("the same call again: %+v, want allowed by session", r.Record)
	}
	g.Check(context.Background(), sh("go test $PKG"))
	if last := f.asked[len(f.asked)-1]; last.Rule != "" {
		t.Errorf("a command with a dynamic word offers the rule %q", last.Rule)
	}
	if got, _, _ := permission.ReadFile(file, false); len(got) != 1 {
		t.Errorf("a dynamic command's always answer wrote a rule: %+v", got)
	}
	if _, err := os.Stat(file); err != nil {
		t.Error(err)
	}
}

// blockingAsker waits for its context, as a person who never answers.
type blockingAsker struct{ asked chan struct{} }

func (b blockingAsker) Ask(ctx context.Context, r Request) (Answer, error) {
	close(b.asked)
	<-ctx.Done()
	return Answer{}, ctx.Err()
}

// A cancel while a person is asked returns the context's error: the call
// is cancelled like any other, nothing recorded.
func TestACancelWhileAskingCancelsTheCall(t *testing.T) {
	b := blockingAsker{asked: make(chan struct{})}
	g := &Gate{Asker: b}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-b.asked; cancel() }()
	_, err := g.Check(ctx, sh("make"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
}

// When no one may be asked (a recovery), what would be asked is denied
// by "nobody", and the asker is never called.
func TestNoAskDeniesWhatWouldBeAsked(t *testing.T) {
	f := &fakeAsker{answer: Answer{Choice: AllowOnce}}
	g := &Gate{Asker: f}
	q := sh("make")
	q.NoAsk = true
	r, _ := g.Check(context.Background(), q)
	if r.Allowed() || r.Record.By != ByNobody || f.count() != 0 {
		t.Errorf("record %+v, asked %d times; want denied by nobody, no one asked", r.Record, f.count())
	}
	q = question("workspace--read", `{}`, true)
	q.NoAsk = true
	if r, _ := g.Check(context.Background(), q); !r.Allowed() {
		t.Errorf("a read was not allowed without asking: %+v", r.Record)
	}
}
