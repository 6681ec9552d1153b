package result

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// dirStore is a FileStore over a directory, like the workspace: it renames
// files into .myelin/tool-results/ and never overwrites.
type dirStore struct {
	dir     string
	renamed int // files SaveFile moved
	copied  int // files SaveFrom wrote
	failAt  string
}

func (d *dirStore) create(name string) (*os.File, string, error) {
	if err := os.MkdirAll(filepath.Join(d.dir, ".myelin/tool-results"), 0o755); err != nil {
		return nil, "", err
	}
	ext := path.Ext(name)
	for n := 1; ; n++ {
		p := ".myelin/tool-results/" + name
		if n > 1 {
			p = fmt.Sprintf(".myelin/tool-results/%s-%d%s", strings.TrimSuffix(name, ext), n, ext)
		}
		f, err := os.OpenFile(filepath.Join(d.dir, p), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		return f, p, err
	}
}

func (d *dirStore) Save(name, data string) (string, error) {
	return d.SaveFrom(name, strings.NewReader(data))
}

func (d *dirStore) SaveFrom(name string, r io.Reader) (string, error) {
	if d.failAt == "SaveFrom" {
		return "", errors.New("disk full")
	}
	f, p, err := d.create(name)
	if err != nil {
		return "", err
	}
	_, err = io.Copy(f, r)
	f.Close()
	if err != nil {
		os.Remove(filepath.Join(d.dir, p))
		return "", err
	}
	d.copied++
	return p, nil
}

func (d *dirStore) SaveFile(name, src string) (string, error) {
	if d.failAt == "SaveFile" {
		return "", errors.New("disk full")
	}
	f, p, err := d.create(name)
	if err != nil {
		return "", err
	}
	f.Close()
	if err := os.Rename(src, filepath.Join(d.dir, p)); err != nil {
		return "", err
	}
	d.renamed++
	return p, nil
}

func (d *dirStore) read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(d.dir, p))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// textFile writes content to a new file and returns it as a TextFile,
// open as a tool would hand it over.
func textFile(t *testing.T, content string) TextFile {
	t.Helper()
	p := filepath.Join(t.TempDir(), "out")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	return TextFile{Path: p, File: f}
}

// withChunk makes the scan read n bytes at a time for the test.
func withChunk(t *testing.T, n int) {
	old := scanChunk
	scanChunk = n
	t.Cleanup(func() { scanChunk = old })
}

// sameAsString converts content as a string and as a TextFile, in
// workspaces of their own, and fails unless both give the same output and
// the same saved files.
func sameAsString(t *testing.T, content string, cap int, structured any) (Output, *dirStore) {
	t.Helper()
	ss, fs := &dirStore{dir: t.TempDir()}, &dirStore{dir: t.TempDir()}
	env := func(s Store) Env { return Env{Store: s, Now: fixedNow, Limits: Limits{Round: 1 << 30}} }
	want := One(Call{ID: "c", Cap: cap, Result: Result{Data: content, Structured: structured}}, env(ss))
	tf := textFile(t, content)
	got := One(Call{ID: "c", Cap: cap, Result: Result{Data: tf, Structured: structured}}, env(fs))
	if got.Text != want.Text || got.Chars != want.Chars || got.SpillPath != want.SpillPath || got.IsError != want.IsError ||
		fmt.Sprint(got.Files) != fmt.Sprint(want.Files) || string(got.Structured) != string(want.Structured) {
		t.Fatalf("file: %+v\nstring: %+v", brief(got), brief(want))
	}
	for _, p := range append([]string{got.SpillPath}, got.Files...) {
		if p != "" && fs.read(t, p) != ss.read(t, p) {
			t.Fatalf("%s differs from the string's", p)
		}
	}
	if _, err := os.Stat(tf.Path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the tool's file is still there: %v", err)
	}
	if err := tf.File.Close(); err == nil {
		t.Fatal("the tool's file was left open")
	}
	return got, fs
}

func brief(o Output) string {
	text := o.Text
	if len(text) > 400 {
		text = text[:200] + " … " + text[len(text)-200:]
	}
	return fmt.Sprintf("text %q chars %d spill %q files %v error %v", text, o.Chars, o.SpillPath, o.Files, o.IsError)
}

func TestTextFileConvertsAsTheStringItHolds(t *testing.T) {
	withChunk(t, 4096)
	long := numbered(3000, 40)
	for _, tc := range []struct {
		name    string
		content string
		cap     int
		moved   bool // the spill is the tool's file, renamed
		copied  bool // the spill is a repaired copy
	}{
		{"empty", "", 0, false, false},
		{"short", "hello\n", 0, false, false},
		{"a few bytes over the cap in bytes, under it in characters", strings.Repeat("é", 1500), 2000, false, false},
		{"under the cap after repair", strings.Repeat("abcdéé\xff", 270), 2000, false, false},
		{"over the cap, clean: moved", long, 0, true, false},
		{"over the cap, one long line", strings.Repeat("x", 100000), 0, true, false},
		{"over the cap, CRLF lines", strings.Repeat("a line\r\n", 5000), 3001, true, false},
		{"multibyte over the cap", strings.Repeat("世界😀é\n", 20000), 0, true, false},
		{"a bad byte in the middle: copied repaired", long[:50000] + "\xff" + long[50000:], 0, false, true},
		{"a bad byte in the first chunk", "\xff" + long, 0, false, true},
		{"a bad byte at the very end", long + "\xe2\x82", 0, false, true},
		{"a lone surrogate", long[:70000] + "\xed\xa0\x80" + long[70000:], 0, false, true},
		{"CESU-8 pairs", strings.Repeat("x\xed\xa0\xbd\xed\xb8\x80\n", 20000), 0, false, true},
		{"no text at all: binary by NUL", "\x00" + long, 0, true, false},
		{"a NUL late", long + "\x00", 0, true, false},
		{"mostly ill formed: binary at the end", long[:1000] + strings.Repeat("\xff\xfe\x81", 100000), 0, true, false},
		{"text, then mostly ill formed", long + strings.Repeat("\xff\xfe\x81", 100000), 0, true, false},
		{"PNG", "\x89PNG\r\n\x1a\n" + strings.Repeat("\x00\x01", 30000), 0, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, fs := sameAsString(t, tc.content, tc.cap, nil)
			if fs.renamed > 0 != tc.moved || fs.copied > 0 != tc.copied {
				t.Fatalf("renamed %d, copied %d; output %s", fs.renamed, fs.copied, brief(out))
			}
		})
	}
}

func TestTextFileChunksNeverSplitASequenceOrAPair(t *testing.T) {
	unit := "aé€😀\xed\xa0\xbd\xed\xb8\x80\xed\xa0\x80\xe2\x82\r\n"
	content := strings.Repeat(unit, 400)
	for chunk := 1; chunk <= 17; chunk++ {
		t.Run(fmt.Sprint(chunk), func(t *testing.T) {
			withChunk(t, chunk)
			sameAsString(t, content, 1000, nil)
		})
	}
}

func TestTextFileStructuredContentFollowsOnlyAnEmptyFile(t *testing.T) {
	for _, content := range []string{"", "text of its own", numbered(3000, 40)} {
		sameAsString(t, content, 0, map[string]int{"n": 1})
	}
}

func TestTextFileInARoundIsShortenedAsItsStringWouldBe(t *testing.T) {
	mk := func(data func(string) any) []Output {
		calls := []Call{
			{ID: "a", Result: Result{Data: data(numbered(3000, 40))}},
			{ID: "b", Result: Result{Data: data(strings.Repeat("b", 9000))}},
			{ID: "c", Result: Result{Data: data(strings.Repeat("ü\n", 8000))}},
		}
		return Round(calls, Env{Store: &dirStore{dir: t.TempDir()}, Now: fixedNow, Limits: Limits{Agent: 10000, Round: 12000}})
	}
	want := mk(func(s string) any { return s })
	got := mk(func(s string) any { return textFile(t, s) })
	for i := range want {
		if got[i].Text != want[i].Text || got[i].SpillPath != want[i].SpillPath {
			t.Fatalf("call %d: file %s\nstring %s", i, brief(got[i]), brief(want[i]))
		}
	}
}

func TestTextFileWithoutAFileStoreOrAWorkspace(t *testing.T) {
	long := numbered(3000, 40)
	for _, tc := range []struct {
		name    string
		content string
		store   Store
		want    string
	}{
		{"a Store that takes only strings", long, &memStore{}, "The whole result is in the workspace file .myelin/tool-results/"},
		{"a Store that takes only strings, repaired", long + "\xff", &memStore{}, "The whole result is in the workspace file .myelin/tool-results/"},
		{"no workspace", long, nil, "The rest was not kept: there is no writable workspace to save it in.]"},
		{"no workspace, repaired", "\xff" + long, nil, "The rest was not kept: there is no writable workspace to save it in.]"},
		{"the move fails", long, &dirStore{dir: t.TempDir(), failAt: "SaveFile"}, "could not be written to the workspace (disk full)"},
		{"the copy fails", "\xff" + long, &dirStore{dir: t.TempDir(), failAt: "SaveFrom"}, "could not be written to the workspace (disk full)"},
		{"binary, no workspace", "\x00" + long, nil, "binary (application/octet-stream, 123001 bytes) could not be saved to the workspace: no writable workspace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tf := textFile(t, tc.content)
			out := One(Call{ID: "c", Result: Result{Data: tf}}, Env{Store: tc.store, Now: fixedNow})
			if !strings.Contains(out.Text, tc.want) {
				t.Fatalf("got %s", brief(out))
			}
			if ms, ok := tc.store.(*memStore); ok && ms.files[out.SpillPath] != WellFormed(tc.content) {
				t.Fatal("the spill file is not the text")
			}
			if _, err := os.Stat(tf.Path); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the tool's file is still there: %v", err)
			}
		})
	}
}

func TestTextFileThatCannotBeReadIsAnErrorNamingIt(t *testing.T) {
	for _, tc := range []struct {
		tf   TextFile
		want string
	}{
		{TextFile{Path: "/nonexistent/out"}, "reading the tool's output file /nonexistent/out: open /nonexistent/out: no such file or directory"},
		{TextFile{}, "the tool returned a result.TextFile without the path of its file"},
	} {
		out := One(Call{ID: "c", Result: Result{Data: tc.tf}}, Env{})
		if !out.IsError || out.Text != tc.want {
			t.Fatalf("got %s, want %q", brief(out), tc.want)
		}
	}
}

func TestTextFileIsTakenOverEvenWhenItsResultFails(t *testing.T) {
	tf := textFile(t, "text")
	out := One(Call{ID: "c", Result: Result{Data: tf, Structured: func() {}}}, Env{})
	if !out.IsError {
		t.Fatalf("got %s", brief(out))
	}
	if _, err := os.Stat(tf.Path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the tool's file is still there: %v", err)
	}
}

// FuzzTextFileIsTheString: a TextFile converts as the string it holds,
// wherever its chunks end.
func FuzzTextFileIsTheString(f *testing.F) {
	f.Add([]byte("a\xed\xa0\xbd\xed\xb8\x80b\xe2\x82\r\n"), uint8(3), uint16(1000))
	f.Add([]byte(strings.Repeat("é\xff\n", 700)), uint8(5), uint16(1000))
	f.Add([]byte(strings.Repeat("x\x00", 900)), uint8(1), uint16(1000))
	f.Fuzz(func(t *testing.T, content []byte, chunk uint8, cap uint16) {
		withChunk(t, int(chunk%32)+1)
		sameAsString(t, strings.Repeat(string(content), 1+2000/(len(content)+1)), int(cap), nil)
	})
}
