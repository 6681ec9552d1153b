package script

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/myelin-run/myelin/result"
)

// wakes records a background script's wakes and answers its sleeps at
// once.
type wakes struct {
	mu      sync.Mutex
	lines   []int
	texts   []string
	journal strings.Builder
	refuse  error
}

func (w *wakes) hooks() Hooks {
	return Hooks{
		ID:      "bg_test",
		Journal: writerFunc(func(p []byte) (int, error) { w.mu.Lock(); defer w.mu.Unlock(); return w.journal.Write(p) }),
		Wake: func(line int, payload result.Result) (string, error) {
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.refuse != nil {
				return "", w.refuse
			}
			w.lines = append(w.lines, line)
			w.texts = append(w.texts, result.One(result.Call{ID: "w", Result: payload}, result.Env{}).Text)
			return "queued", nil
		},
		Sleep: func(ctx context.Context, d time.Duration) error { return ctx.Err() },
		Tail:  8,
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestWakeAgentNamesItsLineAndItsPayloadIsTextBySpec2(t *testing.T) {
	r := newRig(t, Limits{})
	var w wakes
	code := "console.log('watching');\nawait sleep(10);\nconst a = await wake_agent('plain text');\n\nfunction later() { return wake_agent({b: 1, a: 1.5e3}) }\nawait later();\nconsole.log(a)"
	res := RunBackground(context.Background(), Config{Tools: r.reg}, Limits{}, code, w.hooks())
	out := result.One(result.Call{ID: "x", Result: res}, result.Env{})
	if out.IsError {
		t.Fatalf("the script failed: %s", out.Text)
	}
	if want := []int{3, 5}; len(w.lines) != 2 || w.lines[0] != want[0] || w.lines[1] != want[1] {
		t.Errorf("lines %v, want %v", w.lines, want)
	}
	if want := []string{"plain text", `{"a":1500,"b":1}`}; strings.Join(w.texts, "|") != strings.Join(want, "|") {
		t.Errorf("payload texts %q, want %q", w.texts, want)
	}
	if w.journal.String() != "watching\nqueued\n" {
		t.Errorf("journal %q", w.journal.String())
	}
}

func TestABackgroundResultKeepsTheEndOfItsOutput(t *testing.T) {
	r := newRig(t, Limits{})
	var w wakes
	res := RunBackground(context.Background(), Config{Tools: r.reg}, Limits{}, "console.log('0123456789abcdef'); throw new Error('boom')", w.hooks())
	out := result.One(result.Call{ID: "x", Result: res}, result.Env{})
	if !out.IsError || !strings.HasPrefix(out.Text, "the script failed at line 1: Error: boom") || !strings.HasSuffix(out.Text, "\n9abcdef\n") || strings.Contains(out.Text, "012345") {
		t.Errorf("got %q", out.Text)
	}
	if w.journal.String() != "0123456789abcdef\n" {
		t.Errorf("journal %q", w.journal.String())
	}
}

func TestARefusedWakeRejectsWithTheLimitsError(t *testing.T) {
	r := newRig(t, Limits{})
	w := wakes{refuse: errors.New("this script has woken the agent 100 times, its limit")}
	res := RunBackground(context.Background(), Config{Tools: r.reg}, Limits{}, "try { await wake_agent('x') } catch (e) { return e.message }", w.hooks())
	if res.IsError || res.Data != "this script has woken the agent 100 times, its limit" {
		t.Errorf("got %#v", res)
	}
}

func TestWakeAgentAndSleepSayTheyNeedABackgroundScript(t *testing.T) {
	r := newRig(t, Limits{})
	for _, name := range []string{"wake_agent", "sleep"} {
		out, _ := r.run(name + "(1)")
		if !out.IsError || !strings.Contains(out.Text, name+" works only in a background script: start it with code_execution {background: true, code}") {
			t.Errorf("%s: %q", name, out.Text)
		}
	}
	out, _ := r.run("return 1")
	if out.IsError {
		t.Fatal(out.Text)
	}
	in := `{"code":"return 1","background":true}`
	if err := r.exec.Check([]byte(in)); err == nil {
		t.Errorf("code_execution without a background runner accepts background: %s", in)
	}
}
