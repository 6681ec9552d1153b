package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/myelin-run/myelin/result"
)

type greetInput struct {
	Name  string `json:"name" jsonschema:"who to greet"`
	Times int    `json:"times,omitempty" jsonschema:"how many times"`
}

func greet() *Tool {
	return MustFunc("greet", "Greet someone.\nSecond line.", func(ctx context.Context, in greetInput) (any, error) {
		return strings.Repeat("hello "+in.Name+"\n", max(1, in.Times)), nil
	})
}

func dispatcher(t *testing.T, tools ...*Tool) *Dispatcher {
	t.Helper()
	reg := &Registry{}
	if err := reg.Add(tools...); err != nil {
		t.Fatal(err)
	}
	return &Dispatcher{Tools: reg}
}

// reads is t marked read-only: a round runs its calls together.
func reads(t *Tool) *Tool {
	t.ReadOnly = true
	return t
}

func TestFuncInfersTheSchemaFromTheStruct(t *testing.T) {
	raw, err := json.Marshal(greet().InputSchema)
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	for _, want := range []string{`"name":{"type":"string","description":"who to greet"}`, `"required":["name"]`, `"additionalProperties":false`, `"times":{"type":"integer","description":"how many times"}`} {
		if !strings.Contains(s, want) {
			t.Errorf("schema %s lacks %s", s, want)
		}
	}
}

func TestSummaryIsTheFirstLine(t *testing.T) {
	if got := greet().Summary(); got != "Greet someone." {
		t.Fatalf("summary = %q", got)
	}
}

func TestCallRunsTheTypedFunction(t *testing.T) {
	out := dispatcher(t, greet()).Call(context.Background(), Call{ID: "1", Name: "greet", Input: json.RawMessage(`{"name":"Ada","times":2}`)})
	if out.Text != "hello Ada\nhello Ada\n" || out.IsError {
		t.Fatalf("got %+v", out)
	}
}

func TestSchemaErrorNamesTheField(t *testing.T) {
	d := dispatcher(t, greet())
	for input, want := range map[string]string{
		`{"name":5}`:               "name",
		`{}`:                       "name",
		`{"name":"a","times":1.5}`: "times",
		`{"name":"a","extra":1}`:   "extra",
		`not json`:                 "not valid JSON",
	} {
		out := d.Call(context.Background(), Call{ID: "1", Name: "greet", Input: json.RawMessage(input)})
		if !out.IsError || !strings.Contains(out.Text, "invalid input for greet") || !strings.Contains(out.Text, want) {
			t.Errorf("input %s: got %q, want it to name %q", input, out.Text, want)
		}
	}
}

func TestUnknownToolIsAnErrorListingTheTools(t *testing.T) {
	out := dispatcher(t, greet()).Call(context.Background(), Call{ID: "1", Name: "nope", Input: json.RawMessage(`{}`)})
	if !out.IsError || !strings.Contains(out.Text, `no tool named "nope"`) || !strings.Contains(out.Text, "greet") {
		t.Fatalf("got %+v", out)
	}
	var zero Dispatcher
	if out := zero.Call(context.Background(), Call{Name: "x"}); !out.IsError {
		t.Fatalf("the zero Dispatcher ran a tool: %+v", out)
	}
}

func TestPanicBecomesAnErrorResult(t *testing.T) {
	boom := MustFunc("boom", "Panics.", func(ctx context.Context, in struct{}) (any, error) { panic("kaboom") })
	out := dispatcher(t, boom).Call(context.Background(), Call{ID: "1", Name: "boom"})
	if !out.IsError || !strings.Contains(out.Text, "panicked: kaboom") {
		t.Fatalf("got %+v", out)
	}
}

func TestTimeoutBecomesAnErrorResult(t *testing.T) {
	slow := MustFunc("slow", "Waits.", func(ctx context.Context, in struct{}) (any, error) {
		<-ctx.Done()
		time.Sleep(10 * time.Millisecond)
		return "late", nil
	})
	d := dispatcher(t, slow)
	d.Timeout = 50 * time.Millisecond
	out := d.Call(context.Background(), Call{ID: "1", Name: "slow"})
	if !out.IsError || !strings.Contains(out.Text, "did not finish within 50ms") {
		t.Fatalf("got %+v", out)
	}
}

func TestAToolsOwnTimeoutReplacesTheDispatchers(t *testing.T) {
	slow := MustFunc("slow", "Waits.", func(ctx context.Context, in struct{}) (any, error) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
			return "finished", nil
		}
	})
	slow.Timeout = 5 * time.Second
	d := dispatcher(t, slow)
	d.Timeout = 20 * time.Millisecond
	if out := d.Call(context.Background(), Call{ID: "1", Name: "slow"}); out.IsError || out.Text != "finished" {
		t.Fatalf("a tool allowed 5s, under a dispatcher of 20ms: %+v", out)
	}
}

func TestCancellationStopsTheRound(t *testing.T) {
	started := make(chan struct{})
	wait := MustFunc("wait", "Waits.", func(ctx context.Context, in struct{}) (any, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	out := dispatcher(t, wait).Call(ctx, Call{ID: "1", Name: "wait"})
	if !out.IsError || !strings.Contains(out.Text, "cancel") {
		t.Fatalf("got %+v", out)
	}
}

func TestRoundRunsCallsConcurrentlyAndKeepsCallOrder(t *testing.T) {
	// Each call waits until all three have started: they can only finish
	// if they run at the same time.
	var wg sync.WaitGroup
	wg.Add(3)
	meet := reads(MustFunc("meet", "Waits for the others.", func(ctx context.Context, in greetInput) (any, error) {
		wg.Done()
		wg.Wait()
		if in.Name == "first" {
			time.Sleep(20 * time.Millisecond) // finishes last
		}
		return in.Name, nil
	}))
	d := dispatcher(t, meet)
	d.Timeout = 5 * time.Second
	outs := d.Round(context.Background(), []Call{
		{ID: "a", Name: "meet", Input: json.RawMessage(`{"name":"first"}`)},
		{ID: "b", Name: "meet", Input: json.RawMessage(`{"name":"second"}`)},
		{ID: "c", Name: "meet", Input: json.RawMessage(`{"name":"third"}`)},
	})
	for i, want := range []string{"first", "second", "third"} {
		if outs[i].Text != want {
			t.Fatalf("output %d = %+v, want %q", i, outs[i], want)
		}
	}
}

func TestHandlerSeesItsCap(t *testing.T) {
	var got int
	capTool := MustFunc("cap", "Reports its cap.", func(ctx context.Context, in struct{}) (any, error) {
		got = CapFrom(ctx)
		return nil, nil
	})
	d := dispatcher(t, capTool)
	d.Env.Limits = result.Limits{Agent: 5000}
	d.Call(context.Background(), Call{Name: "cap"})
	if got != 5000 {
		t.Fatalf("cap = %d", got)
	}
	d.Call(context.Background(), Call{Name: "cap", Cap: 2000})
	if got != 2000 {
		t.Fatalf("cap = %d", got)
	}
}

func TestRegistryRefusesDuplicatesAndBadNames(t *testing.T) {
	reg := &Registry{}
	if err := reg.Add(greet()); err != nil {
		t.Fatal(err)
	}
	if err := reg.Add(greet()); err == nil || !strings.Contains(err.Error(), "already") {
		t.Fatalf("duplicate: %v", err)
	}
	if _, err := Func("bad name!", "x", func(ctx context.Context, in struct{}) (any, error) { return nil, nil }); err == nil {
		t.Fatal("a bad name was taken")
	}
	if err := reg.Add(&Tool{Name: "nohandler"}); err == nil {
		t.Fatal("a tool without a handler was taken")
	}
}

func TestToolsAreInAStableOrder(t *testing.T) {
	mk := func(n string) *Tool {
		return MustFunc(n, "x", func(ctx context.Context, in struct{}) (any, error) { return nil, nil })
	}
	reg := &Registry{}
	_ = reg.Add(mk("zeta"), mk("alpha"), mk("mid--x"), mk("mid"))
	if got := strings.Join(reg.Names(), ","); got != "alpha,mid,mid--x,zeta" {
		t.Fatalf("order = %s", got)
	}
}

func TestErrorReturnIsAnErrorResult(t *testing.T) {
	fail := MustFunc("fail", "Fails.", func(ctx context.Context, in struct{}) (any, error) {
		return nil, &json.SyntaxError{}
	})
	if out := dispatcher(t, fail).Call(context.Background(), Call{Name: "fail"}); !out.IsError {
		t.Fatalf("got %+v", out)
	}
}

// Converted hands over each call's output as soon as that call is done,
// while the rest of the round still runs, converted alone (before the round
// bound, which may then shorten it).
func TestConvertedGetsEachOutputAsItsCallFinishes(t *testing.T) {
	fastDone := make(chan struct{})
	wait := MustFunc("wait", "Waits for the fast call's output to be handed over.", func(ctx context.Context, in greetInput) (any, error) {
		if in.Name == "slow" {
			select {
			case <-fastDone:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return strings.Repeat(in.Name+" line\n", 2000), nil
	})
	d := dispatcher(t, wait)
	d.Timeout = 5 * time.Second
	d.Env.Limits = result.Limits{Agent: 20000, Round: 2000}
	var mu sync.Mutex
	got := map[string]result.Output{}
	d.Converted = func(i int, c Call, out result.Output) {
		mu.Lock()
		got[c.ID] = out
		mu.Unlock()
		if c.ID == "fast" {
			close(fastDone)
		}
	}
	outs := d.Round(context.Background(), []Call{
		{ID: "slow", Name: "wait", Input: json.RawMessage(`{"name":"slow"}`)},
		{ID: "fast", Name: "wait", Input: json.RawMessage(`{"name":"fast"}`)},
	})
	fast := got["fast"]
	if want := strings.Repeat("fast line\n", 2000); fast.Text != want {
		t.Fatalf("the fast call's output as it finished is %d characters, want its whole text (%d)", len(fast.Text), len(want))
	}
	if len(outs[1].Text) >= len(fast.Text) || !strings.Contains(outs[1].Text, "[myelin: this result is") {
		t.Fatalf("the round bound did not shorten the round's output: %d characters", len(outs[1].Text))
	}
}

// A call the dispatcher gave up on (its timeout) returns later; a file its
// result holds is removed then, not left until the collector or the next
// start.
func TestAResultGivenUpOnHasItsFileRemoved(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.txt")
	returned := make(chan struct{})
	late := MustFunc("late", "Returns a file after the dispatcher stopped waiting.", func(ctx context.Context, in greetInput) (any, error) {
		<-ctx.Done()
		time.Sleep(50 * time.Millisecond)
		if err := os.WriteFile(path, []byte("late output\n"), 0o644); err != nil {
			return nil, err
		}
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		close(returned)
		return result.Result{Data: result.TextFile{Path: path, File: f}}, nil
	})
	d := dispatcher(t, late)
	d.Timeout = 20 * time.Millisecond
	if out := d.Call(context.Background(), Call{ID: "x", Name: "late", Input: json.RawMessage(`{"name":"a"}`)}); !out.IsError {
		t.Fatalf("a call past its timeout: %q", out.Text)
	}
	<-returned
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(path); os.IsNotExist(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the late result's file is still there")
		}
	}
}

// Version changes with every Add that adds tools, and only then.
func TestRegistryVersionChangesWithEveryAdd(t *testing.T) {
	r := &Registry{}
	v0 := r.Version()
	if err := r.Add(greet()); err != nil {
		t.Fatal(err)
	}
	v1 := r.Version()
	if v1 == v0 {
		t.Fatalf("Version %d did not change when a tool was added", v1)
	}
	if err := r.Add(greet()); err == nil || r.Version() != v1 {
		t.Fatalf("a refused Add (%v) changed Version %d → %d", err, v1, r.Version())
	}
	if err := r.Add(); err != nil || r.Version() != v1 {
		t.Fatalf("an Add of nothing (%v) changed Version %d → %d", err, v1, r.Version())
	}
	if err := r.Add(MustFunc("other", "Other.", func(context.Context, struct{}) (any, error) { return "", nil })); err != nil || r.Version() == v1 {
		t.Fatalf("a second tool added (%v) left Version at %d", err, r.Version())
	}
}

// A call whose input is JSON null (some models send it for a tool that
// takes nothing) is a call with {}: it runs, or is refused for what it
// lacks, never with a message about reflection.
func TestANullInputIsAnEmptyObject(t *testing.T) {
	none := MustFunc("none", "Takes nothing.", func(ctx context.Context, in struct{}) (any, error) { return "ran", nil })
	d := dispatcher(t, none, greet())
	if out := d.Call(context.Background(), Call{Name: "none", Input: json.RawMessage(" null ")}); out.IsError || out.Text != "ran" {
		t.Fatalf("none with null: %+v", out)
	}
	out := d.Call(context.Background(), Call{Name: "greet", Input: json.RawMessage("null")})
	want := d.Call(context.Background(), Call{Name: "greet", Input: json.RawMessage("{}")})
	if !out.IsError || out.Text != want.Text || strings.Contains(out.Text, "reflect") {
		t.Fatalf("greet with null: %q, want %q", out.Text, want.Text)
	}
}

// Check refuses exactly the inputs a dispatched call is refused for, with
// the error the call's result gives, and takes empty or null input as {}.
func TestCheckRefusesWhatADispatchedCallIsRefusedFor(t *testing.T) {
	none := MustFunc("none", "Takes nothing.", func(ctx context.Context, in struct{}) (any, error) { return "ran", nil })
	d := dispatcher(t, none, greet())
	tests := []struct {
		tool, input string
		ok          bool
	}{
		{"greet", `{"name":"Ada"}`, true},
		{"greet", `{"name":5}`, false},
		{"greet", `{}`, false},
		{"greet", `null`, false},
		{"greet", `not json`, false},
		{"none", ``, true},
		{"none", ` null `, true},
		{"none", `{"x":1}`, false},
	}
	for _, tt := range tests {
		err := d.Tools.Get(tt.tool).Check(json.RawMessage(tt.input))
		out := d.Call(context.Background(), Call{Name: tt.tool, Input: json.RawMessage(tt.input)})
		if (err == nil) != tt.ok {
			t.Errorf("%s %q: Check = %v, want ok %v", tt.tool, tt.input, err, tt.ok)
			continue
		}
		if err != nil && out.Text != "invalid input for "+tt.tool+": "+err.Error() {
			t.Errorf("%s %q: Check says %q; the call's result is %q", tt.tool, tt.input, err, out.Text)
		}
	}
}

// A round of n calls runs n goroutines, one per call: the round's own
// goroutine watches every call's timeout, with one timer, instead of a
// watcher per call.
func TestARoundCostsOneGoroutinePerCall(t *testing.T) {
	const n = 10
	var arrived sync.WaitGroup
	arrived.Add(n)
	release := make(chan struct{})
	var during int
	wait := reads(MustFunc("wait", "Waits.", func(ctx context.Context, in struct{}) (any, error) {
		arrived.Done()
		<-release
		return "ok", nil
	}))
	d := dispatcher(t, wait)
	calls := make([]Call, n)
	for i := range calls {
		calls[i] = Call{ID: fmt.Sprint(i), Name: "wait"}
	}
	before := runtime.NumGoroutine()
	go func() {
		arrived.Wait()
		during = runtime.NumGoroutine()
		close(release)
	}()
	outs := d.Round(context.Background(), calls)
	for _, o := range outs {
		if o.IsError || o.Text != "ok" {
			t.Fatalf("a call: %+v", o)
		}
	}
	// the calls, and the goroutine above that counted them
	if extra := during - before; extra > n+1 {
		t.Fatalf("a round of %d calls ran %d goroutines", n, extra)
	}
}
