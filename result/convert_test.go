package result

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
	"unsafe"
)

var fixedNow = func() time.Time { return time.Date(2026, 12, 2, 23, 59, 0, 0, time.FixedZone("x", -5*3600)) }

func one(t *testing.T, r Result, store Store) Output {
	t.Helper()
	return One(Call{ID: "call_1", Result: r}, Env{Store: store, Now: fixedNow})
}

func TestStringResultIsItselfWithoutQuotesOrEscapes(t *testing.T) {
	s := "he said \"hi\"\n\tand left\\ <b>&</b> é 😀"
	out := one(t, Result{Data: s}, nil)
	if out.Text != s {
		t.Fatalf("text = %q, want %q", out.Text, s)
	}
	if out.IsError || out.SpillPath != "" || out.Structured != nil {
		t.Fatalf("unexpected output %+v", out)
	}
}

func TestValidStringIsNotCopied(t *testing.T) {
	s := strings.Repeat("plain text é\n", 1000)
	out := one(t, Result{Data: s}, nil)
	if unsafe.StringData(out.Text) != unsafe.StringData(s) {
		t.Fatal("a valid string was copied")
	}
}

func TestStringHoldingJSONIsDecodedInOneParse(t *testing.T) {
	s := `{"b":[1,2],"a":"x"}`
	out := one(t, Result{Data: s}, nil)
	var v map[string]any
	if err := json.Unmarshal([]byte(out.Text), &v); err != nil {
		t.Fatalf("one parse of %q failed: %v", out.Text, err)
	}
	if v["a"] != "x" {
		t.Fatalf("decoded %v", v)
	}
}

func TestTextBlocksAreJoinedWithNewline(t *testing.T) {
	out := one(t, Result{Data: []Block{TextBlock{Text: "one"}, TextBlock{Text: "two\n"}, TextBlock{Text: "three"}}}, nil)
	if want := "one\ntwo\n\nthree"; out.Text != want {
		t.Fatalf("text = %q, want %q", out.Text, want)
	}
}

func TestOtherValuesAreCompactDeterministicJSON(t *testing.T) {
	type point struct {
		X    int    `json:"x"`
		Note string `json:"note"`
	}
	var nilPtr *point
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"map keys sorted", map[string]any{"zeta": 1, "alpha": []int{1, 2}, "mid": map[string]bool{"b": true, "a": false}}, `{"alpha":[1,2],"mid":{"a":false,"b":true},"zeta":1}`},
		{"no HTML escaping", map[string]string{"html": "<a href=\"x\">&</a>"}, `{"html":"<a href=\"x\">&</a>"}`},
		{"struct in field order", point{X: 3, Note: "n"}, `{"x":3,"note":"n"}`},
		{"number", 42.5, `42.5`},
		{"integer", 7, `7`},
		{"bool", true, `true`},
		{"typed null", nilPtr, `null`},
		{"raw JSON compacted", json.RawMessage("{ \"a\" : [ 1 , 2 ] }"), `{"a":[1,2]}`},
		{"slice of strings", []string{"a", "b"}, `["a","b"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := one(t, Result{Data: tc.v}, nil)
			b := one(t, Result{Data: tc.v}, nil)
			if a.Text != tc.want || b.Text != a.Text {
				t.Fatalf("text = %q then %q, want %q", a.Text, b.Text, tc.want)
			}
			if a.IsError {
				t.Fatal("flagged as an error")
			}
		})
	}
}

func TestNothingAndEmptyStringHaveTheSameText(t *testing.T) {
	a := one(t, Result{}, nil)
	b := one(t, Result{Data: ""}, nil)
	c := one(t, Result{Data: []Block{}}, nil)
	if a.Text != "" || b.Text != "" || c.Text != "" || a.IsError || b.IsError {
		t.Fatalf("got %+v, %+v, %+v", a, b, c)
	}
}

func TestErrorResultIsItsTextFlaggedAsError(t *testing.T) {
	for _, r := range []Result{Error("boom: file missing"), {Data: errors.New("boom: file missing")}, FromError(nil, errors.New("boom: file missing"))} {
		out := one(t, r, nil)
		if out.Text != "boom: file missing" || !out.IsError {
			t.Fatalf("got %+v", out)
		}
	}
}

func TestFromErrorTakesAResultAsItIs(t *testing.T) {
	r := Result{Data: "x", EndTurn: true, Structured: 1}
	if got := FromError(r, nil); got.Data != "x" || !got.EndTurn {
		t.Fatalf("got %+v", got)
	}
	if got := FromError(&r, nil); got.Data != "x" || !got.EndTurn {
		t.Fatalf("got %+v", got)
	}
}

func TestEndTurnPassesThrough(t *testing.T) {
	if out := one(t, Result{Data: "done", EndTurn: true}, nil); !out.EndTurn {
		t.Fatal("end turn lost")
	}
}

type cyclic struct {
	Next *cyclic `json:"next"`
}

func TestUnencodableValuesBecomeErrorResultsThatSayWhy(t *testing.T) {
	c := &cyclic{}
	c.Next = c
	for _, tc := range []struct {
		name string
		v    any
		say  string
	}{
		{"cycle", c, "cycle"},
		{"NaN", math.NaN(), "NaN"},
		{"channel", make(chan int), "chan"},
		{"func in map", map[string]any{"f": func() {}}, "func"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := one(t, Result{Data: tc.v}, nil)
			if !out.IsError || !strings.Contains(out.Text, "could not be encoded") || !strings.Contains(out.Text, tc.say) {
				t.Fatalf("got %+v", out)
			}
		})
	}
}

func TestUnencodableStructuredContentIsAnError(t *testing.T) {
	out := one(t, Result{Data: "ok", Structured: math.Inf(1)}, nil)
	if !out.IsError || !strings.Contains(out.Text, "structured content") {
		t.Fatalf("got %+v", out)
	}
}

func TestBinaryStringIsSavedAsAFileWithAStub(t *testing.T) {
	store := &memStore{}
	data := "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + strings.Repeat("\x00\xff", 100)
	out := one(t, Result{Data: data}, store)
	want := ".myelin/tool-results/2026-12-03-call_1-1.png"
	if out.Text != "[binary: image/png, 216 bytes, saved to workspace file "+want+"]" {
		t.Fatalf("text = %q", out.Text)
	}
	if store.files[want] != data {
		t.Fatal("saved file does not hold the bytes")
	}
	if len(out.Files) != 1 || out.Files[0] != want || out.IsError {
		t.Fatalf("got %+v", out)
	}
}

func TestMostlyInvalidUTF8IsBinaryNotAPageOfReplacementCharacters(t *testing.T) {
	store := &memStore{}
	data := strings.Repeat("\xff\xfe\x81", 50) + "ok"
	out := one(t, Result{Data: data}, store)
	if strings.ContainsRune(out.Text, '\uFFFD') || !strings.Contains(out.Text, "[binary: application/octet-stream, 152 bytes, saved to workspace file") {
		t.Fatalf("text = %q", out.Text)
	}
}

func TestAFewInvalidBytesBecomeReplacementCharacters(t *testing.T) {
	out := one(t, Result{Data: "caf\xe9 au lait, " + strings.Repeat("plain ", 10)}, nil)
	if !strings.HasPrefix(out.Text, "caf\uFFFD au lait") || out.IsError {
		t.Fatalf("text = %q", out.Text)
	}
}

func TestBinaryWithoutWorkspaceIsAnErrorNamingThePayload(t *testing.T) {
	for _, store := range []Store{nil, failStore{}} {
		out := one(t, Result{Data: "a\x00b"}, store)
		if !out.IsError || !strings.Contains(out.Text, "binary (application/octet-stream, 3 bytes) could not be saved") {
			t.Fatalf("got %+v", out)
		}
	}
}

func TestBytesAreReadAsAString(t *testing.T) {
	if out := one(t, Result{Data: []byte("line\n")}, nil); out.Text != "line\n" {
		t.Fatalf("text = %q", out.Text)
	}
}

func TestResultInsideDataIsAnError(t *testing.T) {
	if out := one(t, Result{Data: Result{Data: "x"}}, nil); !out.IsError {
		t.Fatalf("got %+v", out)
	}
}

func TestPointerBlocksReadAsTheirValues(t *testing.T) {
	var nilText *TextBlock
	out := one(t, Result{Data: []Block{&TextBlock{Text: "a"}, &ImageBlock{MIMEType: "image/png", Data: []byte("x")}, &ResourceLinkBlock{URI: "u", Name: "n"}, nilText}}, nil)
	if want := "a\n[image: image/png, 1 bytes]\n[resource link \"n\": u; not fetched]\n{\"type\":\"unknown\"}"; out.Text != want || len(out.Images) != 1 {
		t.Fatalf("text = %q, images %d", out.Text, len(out.Images))
	}
}
