package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/myelin-run/myelin/approval"
	"github.com/myelin-run/myelin/permission"
)

// askerWith is a terminal asker whose person types typed.
func askerWith(typed string) (*termAsker, *bytes.Buffer) {
	var out bytes.Buffer
	u := &mcpUI{out: &out, input: newTermInput(strings.NewReader(typed))}
	return &termAsker{ui: u, userFile: "/home/u/.config/myelin/permissions.json"}, &out
}

var shellRequest = approval.Request{Tool: "shell--run", Input: []byte(`{"command":"git status && rm -rf x"}`),
	Command: "git status && rm -rf x", Part: "rm -rf x", Reason: `asked by default: no rule allows shell--run "rm -rf x"`, Rule: "rm -rf x"}

func TestEachAnswerOnTheTerminalIsItsChoice(t *testing.T) {
	for _, tc := range []struct {
		typed  string
		choice approval.Choice
		reason string
	}{
		{"y\n", approval.AllowOnce, ""},
		{"YES\n", approval.AllowOnce, ""},
		{"s\n", approval.AllowSession, ""},
		{"a\n", approval.AllowAlways, ""},
		{"n\nit deletes the build\n", approval.Deny, "it deletes the build"},
		{"n\n\n", approval.Deny, ""},
		{"\nmaybe\ny\n", approval.AllowOnce, ""}, // asked again until an answer
	} {
		a, out := askerWith(tc.typed)
		got, err := a.Ask(context.Background(), shellRequest)
		if err != nil || got.Choice != tc.choice || got.Reason != tc.reason || got.By != "terminal" {
			t.Errorf("typed %q: got %+v, %v; want %s with reason %q, by terminal", tc.typed, got, err, tc.choice, tc.reason)
		}
		if strings.Count(tc.typed, "\n") > 2 && !strings.Contains(out.String(), "answer one of [y/s/a/n]") {
			t.Errorf("typed %q: a wrong answer is not told what to answer:\n%s", tc.typed, out)
		}
	}
}

func TestTheQuestionShowsTheCommandWhatAskedWhyAndWhereAlwaysWrites(t *testing.T) {
	a, out := askerWith("y\n")
	if _, err := a.Ask(context.Background(), shellRequest); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"The model asks to run shell--run:\n    git status && rm -rf x\n",
		"  asked about: rm -rf x\n",
		`  why: asked by default: no rule allows shell--run "rm -rf x"`,
		"  y  yes, this once\n",
		`  s  yes, and for the rest of this session all that "rm -rf x" allows`,
		`  a  always: add "rm -rf x" to /home/u/.config/myelin/permissions.json`,
		"  n  no",
		"Allow it? [y/s/a/n] ",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in the question:\n%s", want, out)
		}
	}
}

func TestWithNoRuleOnlyYesOnceAndNoAreOffered(t *testing.T) {
	r := shellRequest
	r.Rule = ""
	a, out := askerWith("s\na\ny\n")
	got, err := a.Ask(context.Background(), r)
	if err != nil || got.Choice != approval.AllowOnce {
		t.Fatalf("got %+v, %v; want s and a refused, then y taken", got, err)
	}
	q := out.String()
	if strings.Contains(q, "  s  ") || strings.Contains(q, "  a  ") || !strings.Contains(q, "Allow it? [y/n] ") || strings.Count(q, "answer one of [y/n]") != 2 {
		t.Fatalf("the question offers more than y and n, or takes s or a:\n%s", q)
	}
}

func TestAToolsInputIsShownFieldByFieldAndItsControlCharactersEscaped(t *testing.T) {
	r := approval.Request{Tool: "workspace--write", Input: []byte(`{"path":"a.txt","content":"line 1\nline 2 \u001b[2K\u202e","mode":420}`), Rule: "workspace--write"}
	a, out := askerWith("y\n")
	if _, err := a.Ask(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	q := out.String()
	for _, want := range []string{"    mode: 420\n    path: a.txt\n    content:\n      line 1\n      line 2 \\x1b[2K\\u202e\n"} {
		if !strings.Contains(q, want) {
			t.Errorf("no %q in:\n%s", want, q)
		}
	}
	if strings.ContainsAny(q, "\x1b\u202e") {
		t.Errorf("a control character of the model's reached the terminal: %q", q)
	}
	if got := approval.Visible("a\x9bb"); got != `a\x9bb` {
		t.Errorf("a byte that is not UTF-8 (8-bit CSI) is shown as %q", got)
	}
}

// A command, a script or a file's content is shown over lines of its
// own, so the characters \n in it are shown as they are: doubled, they
// would read as other code (a printf that prints a backslash).
func TestTheTerminalShowsTheCharactersBackslashNAsWritten(t *testing.T) {
	var b bytes.Buffer
	writeQuestion(&b, approval.Request{Tool: permission.ShellTool, Command: `printf 'a\nb\n' && sed 's/\n/ /'`}, "rules")
	if want := `    printf 'a\nb\n' && sed 's/\n/ /'` + "\n"; !strings.Contains(b.String(), want) {
		t.Errorf("the command is shown\n%s\nwant the line %q", b.String(), want)
	}
	b.Reset()
	writeQuestion(&b, approval.Request{Tool: "script--run", Input: []byte(`{"code":"console.log(lines.join(\"\\n\"))\nreturn 1"}`)}, "rules")
	if want := "      console.log(lines.join(\"\\n\"))\n      return 1\n"; !strings.Contains(b.String(), want) {
		t.Errorf("the script is shown\n%s\nwant the lines %q", b.String(), want)
	}
}

func TestALongInputIsCutSayingHowMuchMore(t *testing.T) {
	a, out := askerWith("y\n")
	code := strings.Repeat("x = 1;\n", 100)
	if _, err := a.Ask(context.Background(), approval.Request{Tool: "code_execution", Command: "", Input: []byte(`{"code":` + quote(code) + `}`)}); err != nil {
		t.Fatal(err)
	}
	// "code:", 100 lines and the empty one after the last line break
	if !strings.Contains(out.String(), "… and 62 lines more, not shown") {
		t.Fatalf("a 101-line input is not cut at %d lines:\n%s", maxShownLines, out)
	}
}

func TestTheInputsEndIsNoOneToAsk(t *testing.T) {
	a, out := askerWith("")
	if _, err := a.Ask(context.Background(), shellRequest); !errors.Is(err, approval.ErrNoOne) {
		t.Fatalf("got %v, want approval.ErrNoOne", err)
	}
	if !strings.Contains(out.String(), "no answer: the input ended, so the call is not run") {
		t.Fatalf("the end of input is not told:\n%s", out)
	}
}

func TestAQuestionEndsWithItsContext(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	u := &mcpUI{out: &bytes.Buffer{}, input: newTermInput(r)}
	a := &termAsker{ui: u}
	ctx, cancel := context.WithCancelCause(context.Background())
	go cancel(errInterrupted)
	if _, err := a.Ask(ctx, shellRequest); !errors.Is(err, errInterrupted) {
		t.Fatalf("got %v, want the context's cause", err)
	}
	// the line typed after is the next question's, not lost
	go w.Write([]byte("s\n"))
	if got, err := a.Ask(context.Background(), shellRequest); err != nil || got.Choice != approval.AllowSession {
		t.Fatalf("the next question got %+v, %v", got, err)
	}
}

func TestConcurrentQuestionsAreAskedOneAfterTheOther(t *testing.T) {
	a, out := askerWith("y\nn\nno reason\ns\n")
	var wg sync.WaitGroup
	answers := make([]approval.Answer, 3)
	for i := range answers {
		wg.Go(func() {
			answers[i], _ = a.Ask(context.Background(), shellRequest)
		})
	}
	wg.Wait()
	q := out.String()
	blocks := strings.Split(q, "The model asks")[1:]
	if len(blocks) != 3 {
		t.Fatalf("%d questions, want 3:\n%s", len(blocks), q)
	}
	for i, b := range blocks {
		if strings.Count(b, "Allow it?") != 1 {
			t.Errorf("question %d is mixed with another:\n%s", i+1, q)
		}
	}
	got := map[approval.Choice]int{}
	for _, ans := range answers {
		got[ans.Choice]++
	}
	if got[approval.AllowOnce] != 1 || got[approval.Deny] != 1 || got[approval.AllowSession] != 1 {
		t.Fatalf("answers %+v: each line typed should answer one question", answers)
	}
}

// The gate joins the rules of several commands that asked with "; ": the
// question names each.
func TestTheQuestionNamesEachRuleAnAnswerAdds(t *testing.T) {
	r := shellRequest
	r.Command, r.Part, r.Rule = "make && rm -rf build", "", "make; rm -rf build"
	a, out := askerWith("y\n")
	if _, err := a.Ask(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`all that "make" and "rm -rf build" allow` + "\n", `add "make" and "rm -rf build" to /home/u/`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}

func TestHistoryShowSaysWhoDecidedEachCallAndWhen(t *testing.T) {
	at := time.Date(2026, 12, 5, 10, 42, 3, 0, time.Local)
	for _, tc := range []struct {
		rec  permission.Record
		want string
	}{
		{permission.Record{Decision: "allow", By: "rule", Rule: "allow go test * (flag --allow)", At: at}, "[permission: allowed by the rule go test * (flag --allow) · 2026-12-05 10:42:03]"},
		{permission.Record{Decision: "allow", By: "default", Reason: "allowed by default: workspace--read only reads", At: at}, "[permission: allowed by default · 2026-12-05 10:42:03 · allowed by default: workspace--read only reads]"},
		{permission.Record{Decision: "allow", By: "yes", At: at}, "[permission: allowed by --yes · 2026-12-05 10:42:03]"},
		{permission.Record{Decision: "allow", By: "person", Answer: "allow_always", Rule: "allow go test *", At: at}, "[permission: allowed by a person (always), adding go test * · 2026-12-05 10:42:03]"},
		{permission.Record{Decision: "allow", By: "session", Rule: "allow go test * (an answer for this session)", At: at}, "[permission: allowed by a person's answer earlier in the session (go test *) · 2026-12-05 10:42:03]"},
		{permission.Record{Decision: "deny", By: "person", Answer: "deny", Reason: "not now", At: at}, "[permission: denied by a person (no) · 2026-12-05 10:42:03 · not now]"},
		{permission.Record{Decision: "deny", By: "timeout", At: at}, "[permission: denied: no answer came in time · 2026-12-05 10:42:03]"},
		{permission.Record{Decision: "deny", By: "nobody", Reason: "asked by default; no one can be asked", At: at}, "[permission: denied: no one could be asked · 2026-12-05 10:42:03 · asked by default; no one can be asked]"},
	} {
		if got := permissionText(tc.rec); got != tc.want {
			t.Errorf("%+v:\n got %s\nwant %s", tc.rec, got, tc.want)
		}
	}
}

func TestAPermissionLineIsOneLineWhateverTheReasonHolds(t *testing.T) {
	got := permissionText(permission.Record{Decision: "deny", By: "person", Answer: "deny", Reason: "two\nlines \x1b[2J"})
	if strings.ContainsAny(got, "\n\x1b") || !strings.Contains(got, `two\nlines \x1b[2J`) {
		t.Fatalf("permission line %q: want the reason escaped on one line", got)
	}
}

// A call denied because no one could be asked shows the denial the model
// got as it is: the --allow flag and the rule it names can be copied.
func TestADenialsLineShowsTheFlagItNamesAsItIs(t *testing.T) {
	denial := `the call of shell--run was denied and did not run: shell--run "printf 'a\\nb'" needs a person's approval. The user can allow it by running myelin with --allow 'printf a\\nb', or by adding "printf a\\\\nb" to the "allow" list of rules.json.`
	got := deniedText(&permission.Record{Decision: "deny", By: "nobody"}, denial)
	if want := "denied: " + denial; got != want {
		t.Errorf("the tool line says\n%s\nwant\n%s", got, want)
	}
}

// A line that ends in an escaped backslash is shown so: tripled it would
// read as a line continuation, hiding the command on the next line.
func TestTheTerminalShowsALineEndAsTheShellReadsIt(t *testing.T) {
	var b bytes.Buffer
	writeQuestion(&b, approval.Request{Tool: permission.ShellTool, Command: "echo ok\\\\\nrm -rf ~"}, "rules")
	if want := "    echo ok\\\\\n    rm -rf ~\n"; !strings.Contains(b.String(), want) {
		t.Errorf("the command is shown\n%s\nwant the lines\n%s", b.String(), want)
	}
}

// A field's lines cannot pass for another field, nor push one out of
// sight: the fields of one line come first, and a value of several lines
// is indented under its name.
func TestAnInputsFieldCannotBeForgedByAnotherFieldsLines(t *testing.T) {
	content := strings.Repeat("x\n", 38) + "path: notes.txt"
	in, _ := json.Marshal(map[string]string{"path": "/home/u/.bashrc", "content": content})
	var b bytes.Buffer
	writeQuestion(&b, approval.Request{Tool: "workspace--write", Input: in}, "rules")
	if !strings.Contains(b.String(), "    path: /home/u/.bashrc\n") || strings.Contains(b.String(), "\n    path: notes.txt") {
		t.Errorf("the question shows a forged path, or not the real one:\n%s", b.String())
	}
}

// A field's name that is not a plain name is quoted: a line break, a
// ": " or leading spaces in it cannot pass for another field.
func TestAnInputsFieldNameCannotForgeALine(t *testing.T) {
	in := []byte(`{"a\n    path":"notes.txt","  path: x":"y","path":"/home/u/.bashrc"}`)
	var b bytes.Buffer
	writeQuestion(&b, approval.Request{Tool: "workspace--write", Input: in}, "rules")
	q := b.String()
	if strings.Contains(q, "\n    path: notes.txt") || strings.Contains(q, "\n      path: x") || !strings.Contains(q, "    path: /home/u/.bashrc\n") {
		t.Errorf("a field's name forged a line:\n%s", q)
	}
	for _, want := range []string{`    "a\n    path": notes.txt`, `    "  path: x": y`} {
		if !strings.Contains(q, want) {
			t.Errorf("no %q in:\n%s", want, q)
		}
	}
}

// A name holding ": " is not read as a value's part, a value's last line
// breaks are shown, and a long one-line value is cut, not dropped with
// the fields after it.
func TestAnInputIsShownAsItIsWithEveryFieldInSight(t *testing.T) {
	show := func(in []byte) string {
		var b bytes.Buffer
		writeQuestion(&b, approval.Request{Tool: "x", Input: in}, "rules")
		return b.String()
	}
	if a, b := show([]byte(`{"a: b":"c"}`)), show([]byte(`{"a":"b: c"}`)); a == b {
		t.Errorf("two inputs shown alike:\n%s", a)
	}
	if a, b := show([]byte(`{"content":"a\nb\n"}`)), show([]byte(`{"content":"a\nb\n\n\n"}`)); a == b {
		t.Errorf("two inputs shown alike:\n%s", a)
	}
	in, _ := json.Marshal(map[string]string{"path": "/home/u/.bashrc", "content": strings.Repeat("x", 4100)})
	if q := show(in); !strings.Contains(q, "    path: /home/u/.bashrc\n") || !strings.Contains(q, " … and 3,609 characters more on this line, not shown\n") {
		t.Errorf("the question reads\n%s", q)
	}
	name, _ := json.Marshal(map[string]string{"path": "/home/u/.bashrc", "a" + strings.Repeat("\n", 39) + "path": "notes.txt"})
	if q := show(name); !strings.Contains(q, "    path: /home/u/.bashrc\n") || strings.Contains(q, "\n    path: notes.txt") {
		t.Errorf("the question reads\n%s", q)
	}
}
