package workspace

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"regexp"
	"regexp/syntax"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestGrepOutputIsPathLineText(t *testing.T) {
	f := newFixture(t)
	f.write(t, "a.txt", "one\nneedle here\nthree\n")
	f.write(t, "sub/b.txt", "needle again\r\nno\n")
	out := f.call(t, "workspace--grep", map[string]any{"pattern": "needle"})
	want := "a.txt:2:needle here\nsub/b.txt:1:needle again\n[matching lines 1-2 of 2, in 2 of 2 files read]"
	if out.Text != want || out.IsError {
		t.Fatalf("text = %q, want %q", out.Text, want)
	}
	var rep GrepReport
	if err := json.Unmarshal(out.Structured, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Total != 2 || len(rep.Matches) != 2 || rep.Matches[1] != (GrepMatch{Path: "sub/b.txt", Line: 1, Text: "needle again"}) {
		t.Fatalf("structured = %+v", rep)
	}
}

func TestGrepContextLines(t *testing.T) {
	f := newFixture(t)
	f.write(t, "c.txt", "l1\nl2\nhit3\nl4\nl5\nl6\nl7\nhit8\nhit9\nl10\n")
	out := f.call(t, "workspace--grep", map[string]any{"pattern": "^hit", "path": "c.txt", "context": 1})
	want := "c.txt-2-l2\nc.txt:3:hit3\nc.txt-4-l4\n--\nc.txt-7-l7\nc.txt:8:hit8\nc.txt:9:hit9\nc.txt-10-l10\n[matching lines 1-3 of 3, in 1 of 1 files read]"
	if out.Text != want {
		t.Fatalf("text = %q\nwant   %q", out.Text, want)
	}
}

func TestGrepGlobFiltersFiles(t *testing.T) {
	f := newFixture(t)
	f.write(t, "x.go", "func main\n")
	f.write(t, "deep/y.go", "func other\n")
	f.write(t, "z.md", "func in docs\n")
	out := f.call(t, "workspace--grep", map[string]any{"pattern": "func", "glob": "*.go"})
	if strings.Contains(out.Text, "z.md") || !strings.Contains(out.Text, "deep/y.go:1:func other") || !strings.Contains(out.Text, "x.go:1:func main") {
		t.Fatalf("text = %q", out.Text)
	}
	out = f.call(t, "workspace--grep", map[string]any{"pattern": "func", "glob": "deep/**"})
	if strings.Contains(out.Text, "x.go") || !strings.Contains(out.Text, "deep/y.go") {
		t.Fatalf("text = %q", out.Text)
	}
}

func TestGrepBoundsMatchesAndSaysHowToGetTheRest(t *testing.T) {
	f := newFixture(t)
	f.write(t, "many.txt", strings.Repeat("match\n", 250))
	out := f.call(t, "workspace--grep", map[string]any{"pattern": "match", "limit": 100})
	if strings.Count(out.Text, "many.txt:") != 100 {
		t.Fatalf("%d lines shown", strings.Count(out.Text, "many.txt:"))
	}
	if !strings.Contains(out.Text, `[matching lines 1-100 of 250, in 1 of 1 files read; 150 more not shown (the limit); next: workspace--grep {"pattern":"match","limit":100,"skip":100}]`) {
		t.Fatalf("footer = %q", out.Text[strings.LastIndex(out.Text, "["):])
	}
	out = f.call(t, "workspace--grep", map[string]any{"pattern": "match", "limit": 100, "skip": 200})
	if !strings.HasPrefix(out.Text, "many.txt:201:match\n") || !strings.HasSuffix(out.Text, "[matching lines 201-250 of 250, in 1 of 1 files read]") {
		t.Fatalf("text = %q", out.Text)
	}
}

func TestGrepFitsTheCap(t *testing.T) {
	f := newFixture(t)
	f.write(t, "wide.txt", strings.Repeat(strings.Repeat("m", 290)+"\n", 500))
	out := f.callCap(t, "workspace--grep", map[string]any{"pattern": "m", "limit": 500}, 3000)
	if out.SpillPath != "" || utf8.RuneCountInString(out.Text) > 3000 {
		t.Fatalf("grep output: %d characters, spill %q", utf8.RuneCountInString(out.Text), out.SpillPath)
	}
	if !strings.Contains(out.Text, "(the page size); next: workspace--grep") {
		t.Fatalf("footer = %q", out.Text[strings.LastIndex(out.Text, "["):])
	}
}

func TestGrepCutsLongLines(t *testing.T) {
	f := newFixture(t)
	f.write(t, "long.txt", "needle"+strings.Repeat("é", 1000)+"\n")
	out := f.call(t, "workspace--grep", map[string]any{"pattern": "needle"})
	line, _, _ := strings.Cut(out.Text, "\n")
	if !strings.HasSuffix(line, "… [line cut: 706 more characters]") || utf8.RuneCountInString(line) > 400 {
		t.Fatalf("line = %q", line)
	}
}

func TestGrepBadInputIsAClearError(t *testing.T) {
	f := newFixture(t)
	f.write(t, "a.txt", "x\n")
	for _, tc := range []struct {
		input map[string]any
		say   string
	}{
		{map[string]any{"pattern": "a(b"}, `invalid regular expression "a(b": missing closing )`},
		{map[string]any{"pattern": strings.Repeat("(", 5000)}, "…"},
		{map[string]any{"pattern": "x", "glob": strings.Repeat("[", 5000)}, "invalid glob"},
		{map[string]any{"pattern": ""}, "pattern is empty"},
		{map[string]any{"pattern": "x", "limit": 0}, "limit must be 1 or more"},
		{map[string]any{"pattern": "x", "context": -1}, "context must be 0 or more"},
		{map[string]any{"pattern": "x", "glob": "[a-"}, "invalid glob"},
		{map[string]any{"pattern": "x", "path": "nope"}, "nope does not exist"},
	} {
		out := f.call(t, "workspace--grep", tc.input)
		if !out.IsError || !strings.Contains(out.Text, tc.say) || out.SpillPath != "" {
			t.Errorf("%v: got %q, want an error saying %q", tc.input, out.Text, tc.say)
		}
	}
}

func TestGrepPassesOverBinaryFilesAndSkipsMyelinAndGit(t *testing.T) {
	f := newFixture(t)
	f.write(t, "bin.dat", "needle\x00\x01\x02")
	f.write(t, ".git/config", "needle\n")
	f.write(t, ".myelin/tool-results/x.txt", "needle\n")
	f.write(t, "t.txt", "needle\n")
	out := f.call(t, "workspace--grep", map[string]any{"pattern": "needle"})
	if !strings.HasPrefix(out.Text, "t.txt:1:needle\n") || strings.Contains(out.Text, ".git/config:") || strings.Contains(out.Text, ".myelin/tool-results/x.txt:") {
		t.Fatalf("text = %q", out.Text)
	}
	if !strings.Contains(out.Text, "passed over 1 files: bin.dat (binary)") {
		t.Fatalf("text = %q", out.Text)
	}
	// pointed at .myelin, it searches there
	out = f.call(t, "workspace--grep", map[string]any{"pattern": "needle", "path": ".myelin"})
	if !strings.HasPrefix(out.Text, ".myelin/tool-results/x.txt:1:needle") {
		t.Fatalf("text = %q", out.Text)
	}
}

// `--` splits groups of lines only when there are context lines to tell
// them apart, as grep does; without context every line names its place.
func TestGrepSeparatesGroupsOnlyWithContext(t *testing.T) {
	f := newFixture(t)
	f.write(t, "a.txt", "hit1\nl2\nl3\nl4\nhit5\n")
	f.write(t, "b.txt", "hit1\n")
	for _, tc := range []struct {
		context int
		want    string
	}{
		{0, "a.txt:1:hit1\na.txt:5:hit5\nb.txt:1:hit1\n["},
		{1, "a.txt:1:hit1\na.txt-2-l2\n--\na.txt-4-l4\na.txt:5:hit5\n--\nb.txt:1:hit1\n["},
		{2, "a.txt:1:hit1\na.txt-2-l2\na.txt-3-l3\na.txt-4-l4\na.txt:5:hit5\n--\nb.txt:1:hit1\n["},
	} {
		out := f.call(t, "workspace--grep", map[string]any{"pattern": "^hit", "context": tc.context})
		if !strings.HasPrefix(out.Text, tc.want) {
			t.Errorf("context %d: %q, want it to start %q", tc.context, out.Text, tc.want)
		}
	}
}

// The footer names the .git and .myelin directories a search of a
// directory left out and says how to search one; a search that met none
// says nothing of them.
func TestGrepFooterSaysWhichDirectoriesItDidNotSearch(t *testing.T) {
	f := newFixture(t)
	f.write(t, "t.txt", "needle\n")
	for _, tc := range []struct {
		name  string
		input map[string]any
		want  string
	}{
		{"nothing left out", map[string]any{"pattern": "needle"}, "t.txt:1:needle\n[matching lines 1-1 of 1, in 1 of 1 files read]"},
	} {
		if out := f.call(t, "workspace--grep", tc.input); out.Text != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, out.Text, tc.want)
		}
	}
	f.write(t, ".myelin/tool-results/x.txt", "needle\n")
	f.write(t, ".git/config", "needle\n")
	f.write(t, "sub/.git/HEAD", "needle\n")
	f.write(t, "sub/s.txt", "nothing\n")
	for _, tc := range []struct {
		name  string
		input map[string]any
		want  string
	}{
		{"the whole workspace", map[string]any{"pattern": "needle"},
			"t.txt:1:needle\n[matching lines 1-1 of 1, in 1 of 2 files read; not searched: .git/, .myelin/ and 1 more (give one as path to search it, e.g. \"path\":\".git\"; the structured content lists them all)]"},
		{"no match", map[string]any{"pattern": "zzz", "path": "sub"},
			"[no lines match in 1 files read; not searched: sub/.git/ (give one as path to search it, e.g. \"path\":\"sub/.git\")]"},
		{"a file", map[string]any{"pattern": "needle", "path": "t.txt"}, "t.txt:1:needle\n[matching lines 1-1 of 1, in 1 of 1 files read]"},
		{"pointed into .myelin", map[string]any{"pattern": "needle", "path": ".myelin"}, ".myelin/tool-results/x.txt:1:needle\n[matching lines 1-1 of 1, in 1 of 1 files read]"},
	} {
		out := f.call(t, "workspace--grep", tc.input)
		if out.Text != tc.want {
			t.Errorf("%s: %q\nwant %q", tc.name, out.Text, tc.want)
		}
	}
	out := f.call(t, "workspace--grep", map[string]any{"pattern": "needle"})
	var rep GrepReport
	if err := json.Unmarshal(out.Structured, &rep); err != nil {
		t.Fatal(err)
	}
	if want := []string{".git", ".myelin", "sub/.git"}; fmt.Sprint(rep.NotSearched) != fmt.Sprint(want) {
		t.Fatalf("notSearched = %q, want %q", rep.NotSearched, want)
	}
}

func TestGrepMatchesLineByLine(t *testing.T) {
	f := newFixture(t)
	f.write(t, "m.txt", "ab\ncd\nx$\nend")
	for pattern, want := range map[string]string{
		`b\s*c`: "[no lines match",
		`^cd$`:  "m.txt:2:cd\n",
		`d$`:    "m.txt:2:cd\n",
		`end$`:  "m.txt:4:end\n",
		`^`:     "m.txt:1:ab\nm.txt:2:cd\nm.txt:3:x$\nm.txt:4:end\n",
	} {
		out := f.call(t, "workspace--grep", map[string]any{"pattern": pattern})
		if !strings.HasPrefix(out.Text, want) {
			t.Errorf("grep %q = %q, want it to start %q", pattern, out.Text, want)
		}
	}
}

func TestGrepDollarFindsTheEndOfACRLFLine(t *testing.T) {
	f := newFixture(t)
	f.write(t, "w.txt", "ab\r\ncd\r\nx\n")
	for pattern, want := range map[string]string{
		`d$`:    "w.txt:2:cd\n",
		`^..$`:  "w.txt:1:ab\nw.txt:2:cd\n",
		`cd$`:   "w.txt:2:cd\n", // with a required literal
		`[xd]$`: "w.txt:2:cd\nw.txt:3:x\n",
		`\r$`:   "[no lines match",
	} {
		out := f.call(t, "workspace--grep", map[string]any{"pattern": pattern})
		if !strings.HasPrefix(out.Text, want) {
			t.Errorf("grep %q = %q, want it to start %q", pattern, out.Text, want)
		}
	}
}

func TestGrepCaseInsensitiveFindsEveryFold(t *testing.T) {
	f := newFixture(t)
	f.write(t, "k.txt", "Kelvin\n\u212aELVIN sign\nkelvin\nnothing\nMa\u017fs\n")
	for pattern, want := range map[string]string{
		`(?i)kelvin`: "k.txt:1:Kelvin\nk.txt:2:\u212aELVIN sign\nk.txt:3:kelvin\n",
		`(?i)mass`:   "k.txt:5:Ma\u017fs\n",
	} {
		out := f.call(t, "workspace--grep", map[string]any{"pattern": pattern})
		if !strings.HasPrefix(out.Text, want) {
			t.Errorf("grep %q = %q, want it to start %q", pattern, out.Text, want)
		}
	}
}

func TestGrepNoMatch(t *testing.T) {
	f := newFixture(t)
	f.write(t, "a.txt", "x\n")
	out := f.call(t, "workspace--grep", map[string]any{"pattern": "zzz"})
	if out.IsError || out.Text != `[no lines match in 1 files read]` {
		t.Fatalf("got %+v", out)
	}
}

// Reading a file a chunk at a time gives the same output as reading it
// whole, whatever the chunk size: matches, context and line numbers across
// chunk boundaries, and lines longer than a chunk.
func TestGrepIsTheSameAcrossChunkBoundaries(t *testing.T) {
	f := newFixture(t)
	var b strings.Builder
	for i := 0; i < 400; i++ {
		switch {
		case i%13 == 0:
			fmt.Fprintf(&b, "needle %d\n", i)
		case i%50 == 7:
			b.WriteString(strings.Repeat("long ", 60) + "needle\n")
		default:
			fmt.Fprintf(&b, "hay %d\r\n", i)
		}
	}
	b.WriteString("needle at the end without a line end")
	f.write(t, "h.txt", b.String())
	defer func(n int) { grepChunk = n }(grepChunk)
	for _, ctx := range []int{0, 1, 3} {
		grepChunk = 1 << 20
		want := f.call(t, "workspace--grep", map[string]any{"pattern": "needle", "context": ctx, "limit": 1000})
		for _, chunk := range []int{16, 64, 100, 257, 4096} {
			grepChunk = chunk
			got := f.call(t, "workspace--grep", map[string]any{"pattern": "needle", "context": ctx, "limit": 1000})
			if got.Text != want.Text {
				t.Fatalf("context %d, chunk %d:\n%s\nwant\n%s", ctx, chunk, got.Text, want.Text)
			}
		}
	}
}

func TestRequiredLiteral(t *testing.T) {
	for pattern, want := range map[string]string{
		"ERROR":                    "ERROR",
		"[A-Z]+ worker-3 id=[0-9]": " worker-3 id=",
		"a|bcdef":                  "",
		"(?i)error":                "error (folded)",
		"(?i)ERROR [a-z]+":         "error  (folded)",
		"(?i)ünï":                  "",
		"(?i)ログ\\d":                "ログ",
		"(?i)error: ログ":            "error: ログ (folded)",
		"(?i)1-2-3":                "1-2-3",
		"(timeout)+ after":         "timeout",
		"x*abc":                    "abc",
		"ab":                       "ab",
		"a+b?":                     "",
		"[0-9]{3}ms":               "ms",
		"(foo){2}bar":              "foo",
		"line\\nnext":              "",
	} {
		re, err := syntax.Parse(pattern, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		lit, fold := requiredLiteral(re)
		got := string(lit)
		if fold {
			got += " (folded)"
		}
		if got != want {
			t.Errorf("requiredLiteral(%q) = %q, want %q", pattern, got, want)
		}
	}
}

// Whatever path finds candidate lines (a literal of 2 bytes or more found
// by its rarest byte, case-folded or not; every line when there is none),
// grep reports exactly the lines a line-by-line regexp match finds.
func TestGrepFindsTheLinesALineByLineMatchFinds(t *testing.T) {
	f := newFixture(t)
	var b strings.Builder
	for i := 0; i < 3000; i++ {
		fmt.Fprintf(&b, "%s worker-%d request id=%d took %dms\n", []string{"INFO", "ERROR", "warn"}[i%3], i%7, i, i%500)
	}
	text := b.String()
	f.write(t, "log.txt", text)
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	for _, pattern := range []string{"ERROR", `[A-Z]+ worker-3 request id=[0-9]*7 `, `took 4[0-9]ms$`, `^warn`, `(?i)error worker-[12]`, `id=1\d\d `, `x|worker-6 request id=2`, `(?i)WARN`, `(?i)req`, `(?i)Took 1\d+MS$`, `(?i)worker-4 request`, `[0-9]{3}ms`, `^\S+ w\w+-\d r`, `\bid=\d+7\b`, `[A-Z]{4} \w+-[35] `, `^[wE].*\d\dms$`, `(?i)TOOK 4`} {
		re := regexp.MustCompile(pattern)
		var want []int
		for i, l := range lines {
			if re.MatchString(l) {
				want = append(want, i+1)
			}
		}
		out := f.call(t, "workspace--grep", map[string]any{"pattern": pattern, "limit": 5000})
		var rep GrepReport
		if err := json.Unmarshal(out.Structured, &rep); err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, m := range rep.Matches {
			got = append(got, m.Line)
		}
		if rep.Total != len(want) || fmt.Sprint(got) != fmt.Sprint(want[:min(len(want), len(got))]) || len(want) == 0 {
			t.Errorf("%q: %d matches (%v…), want %d (%v…)", pattern, rep.Total, got[:min(5, len(got))], len(want), want[:min(5, len(want))])
		}
	}
}

// countingReader yields n bytes of b (repeated), then tail, and counts
// what was read.
type countingReader struct {
	b    byte
	n    int
	tail string
	read int
}

func (r *countingReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		if r.tail == "" {
			return 0, io.EOF
		}
		k := copy(p, r.tail)
		r.tail = r.tail[k:]
		r.read += k
		return k, nil
	}
	k := min(len(p), r.n)
	for i := range p[:k] {
		p[i] = r.b
	}
	r.n -= k
	r.read += k
	return k, nil
}

func newTestGrepper(t *testing.T, pattern string, context int) *grepper {
	t.Helper()
	re := regexp.MustCompile(pattern)
	dfa, err := newLineDFA(mustParse(t, pattern))
	if err != nil {
		t.Fatal(err)
	}
	return &grepper{lineRe: re, dfa: dfa, context: context,
		limit: 100, budget: 1 << 20, report: GrepReport{Matches: []GrepMatch{}}}
}

// Issue 10 §5: a file of NUL bytes without a newline grew the line buffer
// to the whole file before it was found binary (1 GiB: 4.9 GB resident,
// 23 s). It is binary from its first chunk, and nothing more is read.
func TestGrepDecidesBinaryFromTheFirstChunk(t *testing.T) {
	g := newTestGrepper(t, "x", 0)
	r := &countingReader{b: 0, n: 64 << 20}
	if err := g.file("zeros", r); err != errBinary {
		t.Fatalf("err = %v, want binary", err)
	}
	if r.read > grepChunk || len(g.buf) > grepChunk {
		t.Fatalf("read %d bytes, buffer %d bytes, before deciding; want at most one chunk (%d)", r.read, len(g.buf), grepChunk)
	}
}

// Issue 10 §5: a line longer than the buffer doubled it until the line
// ended. A line's bytes are capped: it is searched in its first
// grepLineMax bytes, the rest is read past, the lines after it keep their
// numbers, and the report says which line was cut.
func TestGrepCapsALinesBytesAndReportsTheCut(t *testing.T) {
	g := newTestGrepper(t, "needle", 0)
	r := &countingReader{b: 'a', n: 40 << 20, tail: "needle after the cut\nneedle on line 2\n"}
	if err := g.file("big.txt", io.MultiReader(strings.NewReader("needle first "), r)); err != nil {
		t.Fatal(err)
	}
	if bound := grepChunk + grepLineMax + 1 + 64<<10; len(g.buf) > bound {
		t.Fatalf("buffer grew to %d bytes, over %d", len(g.buf), bound)
	}
	rep := g.report
	if rep.Total != 2 || rep.Matches[0].Line != 1 || rep.Matches[1].Line != 2 || rep.Matches[1].Text != "needle on line 2" {
		t.Fatalf("matches %+v", rep.Matches)
	}
	if rep.LongLines != 1 || len(rep.LongLineAt) != 1 || rep.LongLineAt[0] != (GrepPlace{Path: "big.txt", Line: 1}) {
		t.Fatalf("long lines %d at %+v", rep.LongLines, rep.LongLineAt)
	}
	if !strings.HasSuffix(rep.Matches[0].Text, "… [line cut: longer than 1 MiB; only its first 1 MiB was searched]") {
		t.Fatalf("first match %.400q", rep.Matches[0].Text)
	}
}

// Cut lines keep their numbers across chunks and as context, and the cut
// never splits a character; the footer names the first cut line.
func TestGrepLongLinesAcrossChunksWithContext(t *testing.T) {
	defer func(c, m int) { grepChunk, grepLineMax = c, m }(grepChunk, grepLineMax)
	grepLineMax = 100
	f := newFixture(t)
	long := strings.Repeat("é", 300) // 600 bytes: cut after 50 characters
	f.write(t, "f.txt", "one\n"+long+"\nthree hit\n"+long+"hit\nfive\n"+long)
	cut := strings.Repeat("é", 50) + "… [line cut: longer than 100 bytes; only its first 100 bytes was searched]"
	want := "f.txt-2-" + cut + "\nf.txt:3:three hit\nf.txt-4-" + cut + "\nf.txt:5:five\nf.txt-6-" + cut + "\n" +
		"[matching lines 1-2 of 2, in 1 of 1 files read; 3 lines longer than 100 bytes were searched in their first 100 bytes only (the first: f.txt:2)]"
	for _, chunk := range []int{16, 64, 150, 4096} {
		grepChunk = chunk
		out := f.call(t, "workspace--grep", map[string]any{"pattern": "hit|five", "path": "f.txt", "context": 1})
		if out.Text != want {
			t.Fatalf("chunk %d: text\n%q\nwant\n%q", chunk, out.Text, want)
		}
	}
}

// Issue 10, low: every number has a documented range; one above it is
// taken as its top, and the next call carries what was used.
func TestGrepClampsLimitAndContext(t *testing.T) {
	f := newFixture(t)
	f.write(t, "m.txt", strings.Repeat("m\n", 30000))
	huge := math.MaxInt
	r, err := f.ws.Grep(context.Background(), GrepInput{Pattern: "m", Limit: &huge, Context: &huge}, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	rep := r.Structured.(*GrepReport)
	if rep.Shown != maxGrepLimit || rep.Next == nil || *rep.Next.Limit != maxGrepLimit || *rep.Next.Context != maxGrepContext || *rep.Next.Skip != maxGrepLimit {
		t.Fatalf("shown %d, next %+v", rep.Shown, rep.Next)
	}
}

// Issue 10, low: a page with room for no match gave a next call with the
// same skip: a model paging on looped forever. The first match of a page is
// always shown, cut to the room there is.
func TestGrepNextCallAlwaysMovesOn(t *testing.T) {
	f := newFixture(t)
	f.write(t, "w.txt", strings.Repeat("needle "+strings.Repeat("w", 400)+"\n", 3))
	call := map[string]any{"pattern": "needle|" + strings.Repeat("q", 700), "path": "w.txt"}
	seen := 0
	for page := 0; call != nil; page++ {
		if page > 5 {
			t.Fatal("the pages do not move on")
		}
		out := f.callCap(t, "workspace--grep", call, 1000)
		var rep GrepReport
		if err := json.Unmarshal(out.Structured, &rep); err != nil || out.IsError {
			t.Fatalf("%v %q", err, out.Text)
		}
		if rep.Shown == 0 {
			t.Fatalf("page %d shows no match: %q", page, out.Text)
		}
		seen += rep.Shown
		call = nil
		if rep.Next != nil {
			raw, _ := json.Marshal(rep.Next)
			_ = json.Unmarshal(raw, &call)
		}
	}
	if seen != 3 {
		t.Fatalf("saw %d matches, want 3", seen)
	}
}
