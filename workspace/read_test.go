package workspace

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/myelin-run/myelin/result"
)

func lines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// nextCall extracts the ready call from a page's footer.
func nextCall(t *testing.T, text string) map[string]any {
	t.Helper()
	i := strings.LastIndex(text, "workspace--read {")
	if i < 0 {
		return nil
	}
	raw := strings.TrimSuffix(text[i+len("workspace--read "):], "]")
	var v map[string]any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		t.Fatalf("footer call %q: %v", raw, err)
	}
	return v
}

func TestReadByLineIsCatNStyleWithAFooter(t *testing.T) {
	f := newFixture(t)
	f.write(t, "f.txt", "alpha\n\tbeta \"q\"\r\ngamma")
	out := f.call(t, "workspace--read", map[string]any{"path": "f.txt"})
	want := "     1\talpha\n     2\t\tbeta \"q\"\n     3\tgamma\n[lines 1-3 of 3 in f.txt; end of file]"
	if out.Text != want || out.IsError {
		t.Fatalf("text = %q, want %q", out.Text, want)
	}
	var page ReadPage
	if err := json.Unmarshal(out.Structured, &page); err != nil {
		t.Fatal(err)
	}
	if page.FirstLine != 1 || page.LastLine != 3 || page.TotalLines != 3 || !page.EOF || page.Next != nil || page.Mode != "lines" {
		t.Fatalf("structured = %+v", page)
	}
}

func TestReadPagesWithTheExactNextCall(t *testing.T) {
	f := newFixture(t)
	f.write(t, "f.txt", lines(5000))
	out := f.call(t, "workspace--read", map[string]any{"path": "f.txt", "offset": 10, "limit": 5})
	if !strings.HasPrefix(out.Text, "    10\tline 10\n") || !strings.Contains(out.Text, "    14\tline 14\n[lines 10-14 of 5000 in f.txt; next page: workspace--read {\"path\":\"f.txt\",\"offset\":15}]") {
		t.Fatalf("text = %q", out.Text)
	}
	// default limit 2000 lines
	f.write(t, "short.txt", strings.Repeat("x\n", 5000))
	out = f.call(t, "workspace--read", map[string]any{"path": "short.txt"})
	if !strings.Contains(out.Text, "[lines 1-2000 of 5000 in short.txt; next page:") {
		t.Fatalf("footer = %q", out.Text[len(out.Text)-120:])
	}
	var page ReadPage
	_ = json.Unmarshal(out.Structured, &page)
	if page.Next == nil || page.Next.Offset == nil || *page.Next.Offset != 2001 {
		t.Fatalf("structured next = %+v", page.Next)
	}
}

func TestReadPageFitsTheCapWhateverTheLinesHold(t *testing.T) {
	f := newFixture(t)
	f.write(t, "wide.txt", strings.Repeat(strings.Repeat("w", 900)+"\n", 200))
	out := f.callCap(t, "workspace--read", map[string]any{"path": "wide.txt"}, 5000)
	if out.SpillPath != "" || utf8.RuneCountInString(out.Text) > 5000 {
		t.Fatalf("a page spilled or overran: %d characters", utf8.RuneCountInString(out.Text))
	}
	if call := nextCall(t, out.Text); call["offset"] != 6.0 {
		t.Fatalf("next call %v", call)
	}
}

func TestReadOfALongLineContinuesByCharacter(t *testing.T) {
	f := newFixture(t)
	f.write(t, "long.txt", "first\n"+strings.Repeat("é", 30000)+"\nlast\n")
	out := f.callCap(t, "workspace--read", map[string]any{"path": "long.txt", "offset": 2}, 2000)
	if out.SpillPath != "" || utf8.RuneCountInString(out.Text) > 2000 {
		t.Fatalf("page: %d characters, spill %q", utf8.RuneCountInString(out.Text), out.SpillPath)
	}
	if !strings.HasPrefix(out.Text, "     2\té") || !strings.Contains(out.Text, "line 2 of 3 in long.txt is longer than a page") {
		t.Fatalf("text = %.200q", out.Text)
	}
	call := nextCall(t, out.Text)
	shown := strings.Count(out.Text, "é")
	if call["offsetChars"] != float64(6+shown) {
		t.Fatalf("next call %v, want offsetChars %d", call, 6+shown)
	}
}

func TestReadByCharacter(t *testing.T) {
	f := newFixture(t)
	f.write(t, "c.txt", "0123456789€abc")
	out := f.call(t, "workspace--read", map[string]any{"path": "c.txt", "offsetChars": 8, "limitChars": 4})
	if want := "89€a\n[characters 9-12 of 14 in c.txt; next page: workspace--read {\"path\":\"c.txt\",\"offsetChars\":12}]"; out.Text != want {
		t.Fatalf("text = %q, want %q", out.Text, want)
	}
	out = f.call(t, "workspace--read", map[string]any{"path": "c.txt", "offsetChars": 12})
	if want := "bc\n[characters 13-14 of 14 in c.txt; end of file]"; out.Text != want {
		t.Fatalf("text = %q, want %q", out.Text, want)
	}
}

func TestReadBadInputIsAClearError(t *testing.T) {
	f := newFixture(t)
	f.write(t, "f.txt", lines(3))
	f.write(t, "bin.dat", "\x7fELF\x00\x00\x01\x02")
	for _, tc := range []struct {
		input map[string]any
		say   string
	}{
		{map[string]any{"path": "f.txt", "offset": -1}, "offset must be 1 or more, got -1"},
		{map[string]any{"path": "f.txt", "offset": 0}, "offset must be 1 or more, got 0"},
		{map[string]any{"path": "f.txt", "offset": 1.5}, "offset"},
		{map[string]any{"path": "f.txt", "offset": "2"}, "offset"},
		{map[string]any{"path": "f.txt", "limit": 0}, "limit must be 1 or more"},
		{map[string]any{"path": "f.txt", "offsetChars": -3}, "offsetChars must be 0 or more, got -3"},
		{map[string]any{"path": "f.txt", "offset": 9}, "offset 9 is past the end of f.txt, which has 3 lines"},
		{map[string]any{"path": "f.txt", "offset": 1, "offsetChars": 2}, "not both"},
		{map[string]any{"path": "bin.dat"}, "bin.dat is a binary file (8 bytes), not text"},
		{map[string]any{"path": "missing.txt"}, "missing.txt does not exist in the workspace"},
		{map[string]any{"path": "."}, "is a directory"},
		{map[string]any{}, "path"},
		{map[string]any{"path": strings.Repeat("d/", 20000) + "x"}, "…"},
		{map[string]any{"path": "/" + strings.Repeat("x", 30000)}, "is absolute"},
	} {
		out := f.call(t, "workspace--read", tc.input)
		if !out.IsError || !strings.Contains(out.Text, tc.say) || out.SpillPath != "" {
			t.Errorf("%v: got %q, want an error saying %q", tc.input, out.Text, tc.say)
		}
	}
}

func TestReadOfAnEmptyFile(t *testing.T) {
	f := newFixture(t)
	f.write(t, "e.txt", "")
	if out := f.call(t, "workspace--read", map[string]any{"path": "e.txt"}); out.IsError || out.Text != "[e.txt is empty]" {
		t.Fatalf("got %+v", out)
	}
}

func TestReadMakesInvalidTextWellFormed(t *testing.T) {
	f := newFixture(t)
	f.write(t, "bad.txt", "caf\xe9 ok, and a lot more plain text after it\n")
	out := f.call(t, "workspace--read", map[string]any{"path": "bad.txt"})
	if !utf8.ValidString(out.Text) || !strings.Contains(out.Text, "caf\uFFFD ok") {
		t.Fatalf("text = %q", out.Text)
	}
}

// A spilled result, read back page by page with the ready calls, never
// spills again and gives back the whole text.
func TestReadingASpillBackPageByPageNeverSpillsAgain(t *testing.T) {
	for name, text := range map[string]string{
		"many lines":     lines(30000),
		"one long line":  strings.Repeat("0123456789", 20000),
		"wide lines":     strings.Repeat(strings.Repeat("x", 3000)+"\n", 40),
		"mixed, unicode": lines(2000) + strings.Repeat("日本語", 20000) + "\n" + lines(100),
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			const cap = 4000
			first := result.One(result.Call{ID: "spill", Result: result.Result{Data: text}, Cap: cap}, result.Env{Store: f.ws})
			if first.SpillPath == "" {
				t.Fatal("did not spill")
			}
			head, _, _ := strings.Cut(first.Text, "[myelin:")
			got := strings.TrimSuffix(head, "\n")
			if strings.HasPrefix(text, head) {
				got = head
			}
			var rest strings.Builder
			rest.WriteString(got)
			call := readCallFromNotice(t, first.Text)
			for pages := 0; call != nil; pages++ {
				if pages > 2000 {
					t.Fatal("too many pages")
				}
				out := f.callCap(t, "workspace--read", call, cap)
				if out.IsError || out.SpillPath != "" || utf8.RuneCountInString(out.Text) > cap {
					t.Fatalf("page %d: error=%v spill=%q chars=%d: %.300q", pages, out.IsError, out.SpillPath, utf8.RuneCountInString(out.Text), out.Text)
				}
				var page ReadPage
				if err := json.Unmarshal(out.Structured, &page); err != nil {
					t.Fatal(err)
				}
				rest.WriteString(pageText(text, page))
				call = nil
				if page.Next != nil {
					raw, _ := json.Marshal(page.Next)
					_ = json.Unmarshal(raw, &call)
				}
			}
			if rest.String() != text {
				t.Fatalf("pages give back %d bytes of %d", rest.Len(), len(text))
			}
		})
	}
}

// pageText is the original text of a page's character range.
func pageText(text string, p ReadPage) string {
	start := result.CharOffset(text, p.OffsetChars)
	return text[start : start+len(cutChars(text[start:], p.Chars))]
}

func readCallFromNotice(t *testing.T, text string) map[string]any {
	t.Helper()
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, "Read on: workspace--read "); ok {
			var v map[string]any
			if err := json.Unmarshal([]byte(rest), &v); err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatal("no ready call in the notice")
	return nil
}

func TestReadyCallsWriteHTMLCharactersAsThemselves(t *testing.T) {
	f := newFixture(t)
	f.write(t, "a&b<c>.txt", lines(3000))
	out := f.call(t, "workspace--read", map[string]any{"path": "a&b<c>.txt", "limit": 10})
	if !strings.Contains(out.Text, `workspace--read {"path":"a&b<c>.txt","offset":11}`) {
		t.Fatalf("footer %q", out.Text[strings.LastIndex(out.Text, "["):])
	}
}

// Issue 10: limit 9223372036854775807 made offset+limit overflow, and the
// page came back empty with a next-page call that was the same call.
func TestReadWithTheLargestLimitShowsThePageAndMovesOn(t *testing.T) {
	f := newFixture(t)
	f.write(t, "a.txt", "one\ntwo\nthree\n")
	huge := math.MaxInt
	out := f.call(t, "workspace--read", ReadInput{Path: "a.txt", Limit: &huge})
	if out.IsError || !strings.HasPrefix(out.Text, "     1\tone\n     2\ttwo\n     3\tthree\n") || !strings.Contains(out.Text, "end of file") {
		t.Fatalf("%q", out.Text)
	}
	two := 2
	out = f.call(t, "workspace--read", ReadInput{Path: "a.txt", Offset: &two, Limit: &huge})
	if out.IsError || !strings.HasPrefix(out.Text, "     2\ttwo\n") {
		t.Fatalf("%q", out.Text)
	}
}

// Issue 10 §5: workspace--read held the whole file (1 GiB: 1.07 GB
// resident). It reads it a block at a time; its totals and pages are those
// of the whole file made well formed, whatever falls on a block boundary.
func TestReadStreamsAsIfTheWholeFileWereMadeWellFormed(t *testing.T) {
	trickyUTF8 := []string{ // whose repair depends on what surrounds each byte
		"\xed\xa0\x80\xed\xb0\x80", "\xed\xa0\x80\xed\xa0\x80\xed\xb0\x80", "\xed\xb0\x80x",
		"\xe2\x82", "\xf0\x9f\x98\x80", "\xf0\x9f\x98", "\x80\x80\x80", "\xc0\xaf\xff\xfe", "é日本\r\n",
	}
	rng := rand.New(rand.NewSource(12))
	var b strings.Builder
	for b.Len() < 4*(256<<10) {
		b.WriteString(trickyUTF8[rng.Intn(len(trickyUTF8))])
		b.WriteString("mostly text, so that the file is not binary\n")
	}
	raw := b.String()
	whole := result.WellFormed(raw)
	f := newFixture(t)
	f.write(t, "t.txt", raw)
	const cap = 20000
	var got strings.Builder
	call := map[string]any{"path": "t.txt", "offsetChars": 0}
	for pages := 0; call != nil; pages++ {
		if pages > 200 {
			t.Fatal("too many pages")
		}
		out := f.callCap(t, "workspace--read", call, cap)
		var page ReadPage
		if err := json.Unmarshal(out.Structured, &page); err != nil || out.IsError {
			t.Fatalf("%v: %.300q", err, out.Text)
		}
		if page.TotalChars != result.Chars(whole) || page.TotalLines != result.Lines(whole) {
			t.Fatalf("totals %d characters, %d lines; the whole file has %d, %d", page.TotalChars, page.TotalLines, result.Chars(whole), result.Lines(whole))
		}
		got.WriteString(cutChars(out.Text, page.Chars))
		call = nil
		if page.Next != nil {
			raw, _ := json.Marshal(page.Next)
			_ = json.Unmarshal(raw, &call)
		}
	}
	if got.String() != whole {
		t.Fatalf("the pages give %d bytes; the whole file made well formed is %d", got.Len(), len(whole))
	}
	// by line, a page deep in the file is the lines of the whole text
	lines := strings.SplitAfter(whole, "\n")
	out := f.callCap(t, "workspace--read", map[string]any{"path": "t.txt", "offset": 1000, "limit": 3}, 1<<20)
	want := ""
	for i := 999; i < 1002; i++ {
		want += fmt.Sprintf("%6d\t%s\n", i+1, strings.TrimSuffix(strings.TrimSuffix(lines[i], "\n"), "\r"))
	}
	if !strings.HasPrefix(out.Text, want) {
		t.Fatalf("page %.300q, want %.300q", out.Text, want)
	}
}

// Issue 10, low: limit has a documented range, 1 to 100000; a larger one
// is taken as 100000, and the next call moves on from there.
func TestReadClampsTheLimit(t *testing.T) {
	f := newFixture(t)
	f.write(t, "many.txt", strings.Repeat("x\n", 150000))
	huge := math.MaxInt
	r, err := f.ws.Read(ReadInput{Path: "many.txt", Limit: &huge}, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	page := r.Structured.(ReadPage)
	if page.LastLine != maxReadLines || page.Next == nil || *page.Next.Offset != maxReadLines+1 {
		t.Fatalf("page %+v, next %+v", page, page.Next)
	}
}

// The last line counts when the file ends in a NUL past the first block
// (0 had stood for "nothing read yet").
func TestReadCountsALastLineThatEndsInANUL(t *testing.T) {
	f := newFixture(t)
	f.write(t, "n.txt", strings.Repeat("line\n", 3000)+"last\x00")
	out := f.call(t, "workspace--read", ReadInput{Path: "n.txt"})
	if !strings.Contains(out.Text, "of 3001 in n.txt") {
		t.Fatalf("footer: %q", out.Text[max(0, len(out.Text)-200):])
	}
}
