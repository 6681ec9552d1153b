package workspace

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestShowNameQuotesWhatIsNotPlain(t *testing.T) {
	for name, want := range map[string]string{
		"a.txt":                         "a.txt",
		"dir/plain é 日本.txt":            "dir/plain é 日本.txt",
		"nl\nfake_entry.txt\t999 bytes": `"nl\nfake_entry.txt\t999 bytes"`,
		"caf\xe9.txt":                   `"caf\xe9.txt"`,
		`"q".txt`:                       `"\"q\".txt"`,
		`in"side.txt`:                   `in"side.txt`,
		"a -> b":                        `"a -> b"`,
		"bidi\u202eexe.txt":             `"bidi\u202eexe.txt"`,
		"cr\r.txt":                      `"cr\r.txt"`,
	} {
		if got := showName(name); got != want {
			t.Errorf("showName(%q) = %s, want %s", name, got, want)
		}
		back, err := pathArg(showName(name))
		if err != nil || back != name {
			t.Errorf("pathArg(%s) = %q, %v; want %q", showName(name), back, err, name)
		}
	}
}

func TestPathArgTakesBackQuotedPathsAndComponents(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{`"sub/nl\nx.txt"`, "sub/nl\nx.txt", ""},
		{`sub/"nl\nx.txt"`, "sub/nl\nx.txt", ""},
		{`"s\xffb"/"c\xe9.txt"`, "s\xffb/c\xe9.txt", ""},
		{`plain/in"side.txt`, `plain/in"side.txt`, ""},
		{`"\x2e\x2e/secret"`, "", `contains ".."`},
		{`"a\x00b"`, "", "NUL"},
		{`"/etc/passwd"`, "", "absolute"},
		{`"bad\q"`, "", "not a valid quoted name"},
		{`sub/"bad\q"`, "", `the component "\"bad\\q\"" starts and ends with a double quote`},
		{`sub/"a\x2fb"`, "", "is not one file name"},
		{`sub/"q"`, "sub/q", ""},
	} {
		got, err := pathArg(tc.in)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("pathArg(%s) = %q, %v; want %q", tc.in, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("pathArg(%s) = %q, %v; want an error saying %q", tc.in, got, err, tc.err)
		}
	}
}

// Issue 10, low: a name with a newline and a tab forged an entry in list
// and grep output, and a name that is not UTF-8 was listed with U+FFFD and
// could not be read back. Such names are shown quoted, and the path shown
// reads the file.
func TestNamesThatAreNotPlainAreShownQuotedAndReadBack(t *testing.T) {
	f := newFixture(t)
	contents := map[string]string{
		"nl\nfake_entry.txt\t999 bytes": "content one\n",
		"caf\xe9.txt":                   "content two\n",
		`"q".txt`:                       "content three\n",
		"plain é.txt":                   "content four\n",
	}
	for name, c := range contents {
		f.write(t, "sub/"+name, c)
	}
	readBack := func(p string) string {
		t.Helper()
		out := f.call(t, "workspace--read", map[string]any{"path": p})
		if out.IsError {
			t.Fatalf("read %s: %s", p, out.Text)
		}
		line, _, _ := strings.Cut(out.Text, "\n")
		return strings.TrimPrefix(line, "     1\t") + "\n"
	}
	want := map[string]bool{}
	for _, c := range contents {
		want[c] = true
	}

	out := f.call(t, "workspace--list", map[string]any{"path": "sub"})
	wantList := `"\"q\".txt"` + "\t14 bytes\n" + `"caf\xe9.txt"` + "\t12 bytes\n" + `"nl\nfake_entry.txt\t999 bytes"` + "\t12 bytes\nplain é.txt\t13 bytes"
	if out.Text != wantList {
		t.Fatalf("list\n%s\nwant\n%s", out.Text, wantList)
	}
	var listed struct{ Entries []Entry }
	if err := json.Unmarshal(out.Structured, &listed); err != nil {
		t.Fatal(err)
	}
	for _, e := range listed.Entries {
		if got := readBack("sub/" + e.Name); !want[got] {
			t.Errorf("list: sub/%s reads %q", e.Name, got)
		}
	}

	out = f.call(t, "workspace--glob", map[string]any{"pattern": "sub/*"})
	shown := strings.Split(out.Text, "\n")
	if len(shown) != 4 || shown[0] != `"sub/\"q\".txt"` {
		t.Fatalf("glob %q", out.Text)
	}
	for _, p := range shown {
		if got := readBack(p); !want[got] {
			t.Errorf("glob: %s reads %q", p, got)
		}
	}

	out = f.call(t, "workspace--grep", map[string]any{"pattern": "content"})
	if !strings.Contains(out.Text, `"sub/nl\nfake_entry.txt\t999 bytes":1:content one`+"\n") || strings.Count(out.Text, "\n") != 4 {
		t.Fatalf("grep %q", out.Text)
	}
	var rep GrepReport
	if err := json.Unmarshal(out.Structured, &rep); err != nil {
		t.Fatal(err)
	}
	for _, m := range rep.Matches {
		if got := readBack(m.Path); got != m.Text+"\n" {
			t.Errorf("grep: %s reads %q, want %q", m.Path, got, m.Text)
		}
	}
	// read's footer and next call name the file as shown
	f.write(t, "sub/caf\xe9.txt", lines(3000))
	out = f.call(t, "workspace--read", map[string]any{"path": `sub/"caf\xe9.txt"`})
	if call := nextCall(t, out.Text); call["path"] != `"sub/caf\xe9.txt"` {
		t.Fatalf("next call %v", call)
	}
}

// Issue 10, low: workspace--write and --edit took paths as given, so the
// quoted form that list, glob, grep and read show for an odd name made a
// new file named with the quotes instead of writing the one shown.
func TestWriteAndEditTakeTheQuotedFormBack(t *testing.T) {
	f := newFixture(t)
	f.write(t, "sub/caf\xe9.txt", "old text\n")
	for _, tc := range []struct {
		tool  string
		input map[string]any
		file  string
		want  string
		shown string
	}{
		{"workspace--write", map[string]any{"path": `"sub/nl\nx.txt"`, "content": "one\n"}, "sub/nl\nx.txt", "one\n", `created "sub/nl\nx.txt"`},
		{"workspace--write", map[string]any{"path": `sub/"tab\tx.txt"`, "content": "two\n"}, "sub/tab\tx.txt", "two\n", `created "sub/tab\tx.txt"`},
		{"workspace--edit", map[string]any{"path": `sub/"caf\xe9.txt"`, "old_string": "old", "new_string": "new"}, "sub/caf\xe9.txt", "new text\n", `replaced 1 occurrence(s) in "sub/caf\xe9.txt"`},
		{"workspace--write", map[string]any{"path": `"sub/caf\xe9.txt"`, "content": "three\n"}, "sub/caf\xe9.txt", "three\n", `replaced "sub/caf\xe9.txt"`},
	} {
		out := f.call(t, tc.tool, tc.input)
		if out.IsError || !strings.HasPrefix(out.Text, tc.shown) {
			t.Errorf("%s %v: %s; want it to start %s", tc.tool, tc.input["path"], out.Text, tc.shown)
			continue
		}
		b, err := os.ReadFile(filepath.Join(f.dir, tc.file))
		if err != nil || string(b) != tc.want {
			t.Errorf("%s %v: %q holds %q, %v; want %q", tc.tool, tc.input["path"], tc.file, b, err, tc.want)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(f.dir, "sub"))
	for _, e := range entries {
		if strings.Contains(e.Name(), `"`) {
			t.Errorf("a file named with the quotes was made: %q", e.Name())
		}
	}
	out := f.call(t, "workspace--write", map[string]any{"path": `"bad\q"`, "content": "x"})
	if !out.IsError || !strings.Contains(out.Text, "not a valid quoted name") {
		t.Errorf("a bad quoted path: %s", out.Text)
	}
}
