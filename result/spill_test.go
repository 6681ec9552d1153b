package result

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// numbered is n lines "line 000001 xxxx…" of width characters each (plus \n).
func numbered(n, width int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		l := fmt.Sprintf("line %06d ", i)
		b.WriteString(l + strings.Repeat("x", width-len(l)) + "\n")
	}
	return b.String()
}

// readCall finds the ready workspace--read call in a notice and decodes it.
func readCall(t *testing.T, text string) map[string]any {
	t.Helper()
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, "Read on: workspace--read "); ok {
			var v map[string]any
			if err := json.Unmarshal([]byte(rest), &v); err != nil {
				t.Fatalf("the ready call %q is not compact JSON: %v", rest, err)
			}
			if compact, _ := json.Marshal(v); len(compact) != len(rest) {
				t.Fatalf("the ready call %q is not compact", rest)
			}
			return v
		}
	}
	t.Fatalf("no ready workspace--read call in %q", text[max(0, len(text)-600):])
	return nil
}

func TestCapPrecedence(t *testing.T) {
	for _, tc := range []struct {
		call int
		l    Limits
		want int
	}{
		{0, Limits{}, 24000},
		{0, Limits{Host: 5000}, 5000},
		{0, Limits{Agent: 3000, Host: 5000}, 3000},
		{2000, Limits{Agent: 3000, Host: 5000}, 2000},
		{10, Limits{Agent: 3000}, 1000},
		{0, Limits{Agent: 5}, 1000},
		{0, Limits{Host: 1}, 1000},
	} {
		if got := CapFor(tc.call, tc.l); got != tc.want {
			t.Errorf("CapFor(%d, %+v) = %d, want %d", tc.call, tc.l, got, tc.want)
		}
	}
}

func TestStringIsMeasuredAsItsOwnText(t *testing.T) {
	// 1000 characters, every one a quote: its JSON form would be 2002.
	s := strings.Repeat(`"`, 1000)
	out := One(Call{ID: "q", Result: Result{Data: s}, Cap: 1000}, Env{Store: &memStore{}})
	if out.Text != s || out.SpillPath != "" {
		t.Fatalf("a string of exactly its cap was cut: %+v", out.SpillPath)
	}
	// characters, not bytes: 1000 four-byte characters fit a cap of 1000
	s = strings.Repeat("😀", 1000)
	if out := One(Call{ID: "e", Result: Result{Data: s}, Cap: 1000}, Env{Store: &memStore{}}); out.Text != s {
		t.Fatal("a cap was measured in bytes")
	}
}

func TestSpillWritesTheWholeTextVerbatim(t *testing.T) {
	store := &memStore{}
	text := numbered(5000, 40)
	out := One(Call{ID: "toolu_01/ab c", Result: Result{Data: text}}, Env{Store: store, Now: fixedNow})
	want := ".myelin/tool-results/2026-12-03-toolu_01_ab_c.txt"
	if out.SpillPath != want {
		t.Fatalf("spill path = %q, want %q", out.SpillPath, want)
	}
	if store.files[want] != text {
		t.Fatal("the spill file does not hold the whole text verbatim")
	}
	if out.Chars != utf8.RuneCountInString(text) {
		t.Fatalf("chars = %d", out.Chars)
	}
}

func TestSpillFileIsNeverOverwritten(t *testing.T) {
	store := &memStore{}
	a := One(Call{ID: "same", Result: Result{Data: numbered(3000, 40)}}, Env{Store: store, Now: fixedNow})
	b := One(Call{ID: "same", Result: Result{Data: numbered(4000, 40)}}, Env{Store: store, Now: fixedNow})
	if a.SpillPath == b.SpillPath {
		t.Fatalf("both spilled to %s", a.SpillPath)
	}
	if store.files[a.SpillPath] != numbered(3000, 40) || store.files[b.SpillPath] != numbered(4000, 40) {
		t.Fatal("a spill file was overwritten")
	}
}

func TestHeadIsCutAtALineEndWhenThatKeeps80Percent(t *testing.T) {
	text := numbered(5000, 40)
	out := One(Call{ID: "c", Result: Result{Data: text}}, Env{Store: &memStore{}})
	head, _, _ := strings.Cut(out.Text, "[myelin:")
	if !strings.HasSuffix(head, "\n") || !strings.HasPrefix(text, head) {
		t.Fatalf("head does not end at a line end: %q", head[len(head)-50:])
	}
	if n := utf8.RuneCountInString(out.Text); n > DefaultCap || n < DefaultCap*8/10 {
		t.Fatalf("output is %d characters", n)
	}
	call := readCall(t, out.Text)
	lines := strings.Count(head, "\n")
	if call["offset"] != float64(lines+1) || call["path"] != out.SpillPath {
		t.Fatalf("ready call %v, want offset %d", call, lines+1)
	}
	if !strings.Contains(out.Text, fmt.Sprintf("lines 1-%d", lines)) || !strings.Contains(out.Text, "5000 lines") ||
		!strings.Contains(out.Text, fmt.Sprintf("this result is %d characters", len(text))) ||
		!strings.Contains(out.Text, "workspace--grep {\"pattern\":") {
		t.Fatalf("notice = %q", out.Text[len(head):])
	}
}

func TestHeadIsCutAtTheCapWhenTheLastLineEndIsTooEarly(t *testing.T) {
	text := "short\n" + strings.Repeat("y", 50000)
	out := One(Call{ID: "c", Result: Result{Data: text}, Cap: 2000}, Env{Store: &memStore{}})
	head, _, _ := strings.Cut(out.Text, "\n[myelin:")
	if !strings.HasPrefix(text, head) || len(head) < 1000 {
		t.Fatalf("head = %q", head)
	}
	if n := utf8.RuneCountInString(out.Text); n > 2000 {
		t.Fatalf("output is %d characters, over the cap", n)
	}
	call := readCall(t, out.Text)
	if call["offsetChars"] != float64(len(head)) {
		t.Fatalf("ready call %v, want offsetChars %d", call, len(head))
	}
	if !strings.Contains(out.Text, "the last in part") {
		t.Fatal("the notice does not say the last line is shown in part")
	}
}

func TestCutNeverSplitsACharacterOrACRLF(t *testing.T) {
	for shift := 0; shift < 8; shift++ {
		for _, unit := range []string{"€", "😀", "\r\n", "a\r\n"} {
			text := strings.Repeat("a", shift) + strings.Repeat(unit, 3000)
			out := One(Call{ID: "c", Result: Result{Data: text}, Cap: 1000}, Env{Store: &memStore{}})
			if !utf8.ValidString(out.Text) {
				t.Fatalf("cut split a character (shift %d, %q)", shift, unit)
			}
			before, _, _ := strings.Cut(out.Text, "[myelin:")
			cut := len(before)
			if !strings.HasPrefix(text, before) {
				cut-- // the line end put before the notice
			}
			if text[cut-1] == '\r' && text[cut] == '\n' {
				t.Fatalf("cut split a CRLF (shift %d, %q)", shift, unit)
			}
		}
	}
}

func TestOutputNeverExceedsItsCap(t *testing.T) {
	for _, cap := range []int{1000, 1500, 5000, 24000} {
		for _, text := range []string{numbered(4000, 30), strings.Repeat("z", 100000), numbered(100, 3000), strings.Repeat("é\n", 40000)} {
			out := One(Call{ID: "a-very-long-call-id-that-makes-the-notice-longer-than-usual-0123456789", Result: Result{Data: text}, Cap: cap}, Env{Store: &memStore{}})
			if n := utf8.RuneCountInString(out.Text); n > cap {
				t.Errorf("cap %d: output is %d characters", cap, n)
			}
		}
	}
}

func TestNoticeSaysWhyWhenTheSpillCannotBeWritten(t *testing.T) {
	out := One(Call{ID: "c", Result: Result{Data: numbered(3000, 40)}}, Env{Store: failStore{}})
	if out.SpillPath != "" || !strings.Contains(out.Text, "The rest was not kept: it could not be written to the workspace (disk full).") {
		t.Fatalf("notice = %q", out.Text[len(out.Text)-300:])
	}
	if strings.Contains(out.Text, "workspace--read") {
		t.Fatal("the notice offers a call to read a file that does not exist")
	}
}

func TestNoticeSaysSoWithNoWritableWorkspace(t *testing.T) {
	out := One(Call{ID: "c", Result: Result{Data: numbered(3000, 40)}}, Env{})
	if !strings.Contains(out.Text, "The rest was not kept: there is no writable workspace to save it in.") {
		t.Fatalf("notice = %q", out.Text[len(out.Text)-300:])
	}
}

func TestErrorsSpillAndStayErrors(t *testing.T) {
	store := &memStore{}
	text := numbered(3000, 40)
	out := One(Call{ID: "c", Result: Result{Data: text, IsError: true}}, Env{Store: store})
	if !out.IsError || out.SpillPath == "" || store.files[out.SpillPath] != text {
		t.Fatalf("got error=%v spill=%q", out.IsError, out.SpillPath)
	}
}

func TestRoundBoundSpillsTheLargestFirst(t *testing.T) {
	store := &memStore{}
	// cap 10000, bound 40000: three results of 9000 and one of 30000 → the 30000 one is spilled.
	calls := []Call{
		{ID: "a", Result: Result{Data: strings.Repeat("a", 9000)}},
		{ID: "b", Result: Result{Data: strings.Repeat("b", 30000)}},
		{ID: "c", Result: Result{Data: strings.Repeat("c", 9000)}},
		{ID: "d", Result: Result{Data: strings.Repeat("d", 9000)}},
	}
	outs := Round(calls, Env{Store: store, Limits: Limits{Agent: 10000}})
	sum := 0
	for _, o := range outs {
		sum += utf8.RuneCountInString(o.Text)
	}
	if sum > 40000 {
		t.Fatalf("round is %d characters, over its bound", sum)
	}
	if outs[0].SpillPath != "" || outs[2].SpillPath != "" || outs[3].SpillPath != "" || outs[1].SpillPath == "" {
		t.Fatalf("spilled: %q %q %q %q", outs[0].SpillPath, outs[1].SpillPath, outs[2].SpillPath, outs[3].SpillPath)
	}
	if !strings.HasPrefix(outs[0].Text, "aaa") || outs[0].Text != calls[0].Result.Data {
		t.Fatal("results are not in call order")
	}
}

// headOf is the part of a cut text before its notice.
func headOf(t *testing.T, text string) string {
	t.Helper()
	i := strings.LastIndex(text, "[myelin: this result is ")
	if i < 0 {
		t.Fatalf("no notice in %q", text[max(0, len(text)-300):])
	}
	return strings.TrimSuffix(text[:i], "\n")
}

func TestRoundBoundShortensHeadsDownToTheFloorAndNoFurther(t *testing.T) {
	calls := make([]Call, 8)
	for i := range calls {
		calls[i] = Call{ID: fmt.Sprint(i), Result: Result{Data: numbered(2000, 40)}}
	}
	outs := Round(calls, Env{Store: &memStore{}, Limits: Limits{Agent: 20000, Round: 5000}})
	sum := 0
	for _, o := range outs {
		sum += utf8.RuneCountInString(o.Text)
		if n := utf8.RuneCountInString(headOf(t, o.Text)); n < MinCap || n > MinCap+41 || o.SpillPath == "" {
			t.Fatalf("a result's head kept %d characters (spill %q), want %d", n, o.SpillPath, MinCap)
		}
	}
	if sum <= 5000 {
		t.Fatalf("the round is %d characters: it cannot fit 5000 above the floor, so it goes over", sum)
	}
}

// The round of the issue: eight results of 23,040 characters and a 168k
// error under the default caps. Before the floor was on the head, four of
// them kept 943 characters.
func TestRoundBoundNeverLeavesAShortenedResultUnderTheFloor(t *testing.T) {
	calls := make([]Call, 0, 9)
	for i := range 8 {
		calls = append(calls, Call{ID: fmt.Sprint("r", i), Result: Result{Data: numbered(576, 40)}})
	}
	calls = append(calls, Call{ID: "err", Result: Result{Data: numbered(4200, 40), IsError: true}})
	outs := Round(calls, Env{Store: &memStore{}})
	for i, o := range outs {
		n := utf8.RuneCountInString(o.Text)
		if o.SpillPath != "" {
			n = utf8.RuneCountInString(headOf(t, o.Text))
		}
		if n < MinCap {
			t.Fatalf("result %d kept %d characters of its own text, under the floor of %d", i, n, MinCap)
		}
	}
}

func TestRoundBoundLeavesAResultAloneWhenCuttingItWouldGoUnderTheFloor(t *testing.T) {
	store := &memStore{}
	calls := []Call{
		{ID: "a", Result: Result{Data: strings.Repeat("a", 1200)}},
		{ID: "b", Result: Result{Data: strings.Repeat("b", 1200)}},
	}
	outs := Round(calls, Env{Store: store, Limits: Limits{Round: 1000}})
	for _, o := range outs {
		if o.SpillPath != "" || utf8.RuneCountInString(o.Text) != 1200 {
			t.Fatalf("a 1,200-character result was cut to %d (spill %q)", utf8.RuneCountInString(o.Text), o.SpillPath)
		}
	}
}

func TestConvertThenFitIsRoundAndWritesEachSpillOnce(t *testing.T) {
	calls := []Call{
		{ID: "a", Result: Result{Data: numbered(700, 40)}},  // 28,700: over its cap
		{ID: "b", Result: Result{Data: numbered(500, 40)}},  // 20,500: under it
		{ID: "c", Result: Result{Data: numbered(2000, 40)}}, // over
		{ID: "d", Result: Result{Data: numbered(500, 40)}},  // under
		{ID: "e", Result: Result{Data: numbered(500, 40)}},  // under
	}
	env := Env{Limits: Limits{Round: 40000}}
	roundStore := &memStore{}
	env.Store = roundStore
	want := Round(calls, env)
	stepStore := &memStore{}
	env.Store = stepStore
	alone := make([]Output, len(calls))
	for i, c := range calls {
		alone[i] = Convert(c, env)
	}
	if alone[1].SpillPath != "" || alone[1].Text != calls[1].Result.Data.(string) || alone[0].SpillPath == "" {
		t.Fatalf("Convert cut a result under its cap, or not one over it")
	}
	got := Fit(alone, env)
	for i := range want {
		if got[i].Text != want[i].Text || got[i].SpillPath != want[i].SpillPath {
			t.Fatalf("result %d: Convert then Fit gave %q (spill %q), Round gave %q (spill %q)",
				i, got[i].Text[:80], got[i].SpillPath, want[i].Text[:80], want[i].SpillPath)
		}
	}
	if len(stepStore.files) != len(roundStore.files) {
		t.Fatalf("Convert then Fit wrote %d files, Round %d", len(stepStore.files), len(roundStore.files))
	}
	for path := range stepStore.files {
		if strings.Contains(path, "-2.txt") {
			t.Fatalf("a spill file was written twice: %s", path)
		}
	}
}

func TestShortResultsCountLessTowardTheRoundBound(t *testing.T) {
	calls := []Call{
		{ID: "small", Result: Result{Data: "ok"}},
		{ID: "big", Result: Result{Data: strings.Repeat("b", 39990)}},
	}
	outs := Round(calls, Env{Store: &memStore{}, Limits: Limits{Agent: 40000, Round: 40000}})
	if outs[1].SpillPath != "" || outs[0].Text != "ok" {
		t.Fatalf("a round that fits was cut: %q", outs[1].SpillPath)
	}
}

func TestSafeLabel(t *testing.T) {
	for in, want := range map[string]string{
		"toolu_01AB":            "toolu_01AB",
		"call/../../etc":        "call_.._.._etc",
		"":                      "call",
		"..":                    "call",
		"é x":                   "__x",
		strings.Repeat("a", 99): strings.Repeat("a", 64),
	} {
		if got := safeLabel(in); got != want {
			t.Errorf("safeLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestOneGigabyteStringSpillsWhole(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 1 GB")
	}
	text := strings.Repeat("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n", 1<<24) // 1 GiB
	store := &memStore{}
	out := One(Call{ID: "huge", Result: Result{Data: text}}, Env{Store: store})
	if out.SpillPath == "" || len(store.files[out.SpillPath]) != len(text) {
		t.Fatalf("spill %q", out.SpillPath)
	}
	if n := utf8.RuneCountInString(out.Text); n > DefaultCap || !strings.Contains(out.Text, "this result is 1073741824 characters in 16777216 lines") {
		t.Fatalf("%d characters: %q", n, out.Text[len(out.Text)-400:])
	}
}

// A result the round bound cannot shorten above its floor is not spilled
// on the way to finding that out: no file that nothing refers to.
func TestRoundBoundWritesNoSpillFileForAResultItLeavesWhole(t *testing.T) {
	store := &memStore{}
	calls := []Call{
		{ID: "a", Result: Result{Data: strings.Repeat("a", 1100)}},
		{ID: "b", Result: Result{Data: strings.Repeat("b", 1100)}},
		{ID: "c", Result: Result{Data: strings.Repeat("c", 1100)}},
	}
	for _, o := range Round(calls, Env{Store: store, Limits: Limits{Round: 1000}}) {
		if o.SpillPath != "" {
			t.Fatalf("a 1,100-character result was cut: %q", o.SpillPath)
		}
	}
	if len(store.files) != 0 {
		t.Fatalf("spill files nothing refers to: %v", len(store.files))
	}
}

// A label made without the regular expression is the one it makes.
func FuzzSafeLabelIsTheRegexps(f *testing.F) {
	for _, s := range []string{"toolu_01AB", "call/../x", "é x", "", "..", "a.b-c_D9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if labelSafe(id) && unsafeLabel().ReplaceAllString(id, "_") != id {
			t.Fatalf("%q is taken as safe", id)
		}
	})
}

// The spill date is the day of the environment's clock, whichever day
// was formatted last.
func TestSpillDateFollowsTheClock(t *testing.T) {
	for _, day := range []string{"2026-12-03", "2026-12-03", "2026-12-04", "1999-01-31", "2026-12-04"} {
		at, err := time.Parse("2006-01-02 15:04", day+" 23:59")
		if err != nil {
			t.Fatal(err)
		}
		if got := spillDate(Env{Now: func() time.Time { return at }}); got != day {
			t.Errorf("on %s: %s", day, got)
		}
	}
}
