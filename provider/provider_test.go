package provider

import (
	"strings"
	"testing"
)

func TestEndpointFromEnv(t *testing.T) {
	t.Setenv("X_KEY", "from-env")
	t.Setenv("X_BASE", "http://127.0.0.1:9")
	for _, tc := range []struct {
		in   Endpoint
		want Endpoint
	}{
		{Endpoint{}, Endpoint{APIKey: "from-env", BaseURL: "http://127.0.0.1:9", MaxRetries: DefaultRetries}},
		{Endpoint{APIKey: "given", BaseURL: "http://h", MaxRetries: 2}, Endpoint{APIKey: "given", BaseURL: "http://h", MaxRetries: 2}},
		{Endpoint{MaxRetries: -1}, Endpoint{APIKey: "from-env", BaseURL: "http://127.0.0.1:9", MaxRetries: 0}},
	} {
		got, err := tc.in.FromEnv("X", "X_KEY", "X_BASE", "")
		if err != nil || got != tc.want {
			t.Errorf("FromEnv(%+v) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	t.Setenv("X_KEY", "")
	_, err := Endpoint{}.FromEnv("X", "X_KEY", "X_BASE", "(or else)")
	if err == nil || err.Error() != "no X API key: set X_KEY (or else)" {
		t.Fatalf("err = %v", err)
	}
}

func TestToolCallKeepsArgumentsThatAreNotJSONInText(t *testing.T) {
	if p := ToolCall("c1", "n\xff", `{"a":1}`); string(p.Input) != `{"a":1}` || p.Text != "" || p.Name != "n\uFFFD" {
		t.Fatalf("part: input %s, text %q, name %q; want the object as input, no text, the name well formed", p.Input, p.Text, p.Name)
	}
	if p := ToolCall("c1", "n", ""); string(p.Input) != "{}" {
		t.Fatalf("empty arguments: %+v", p)
	}
	if p := ToolCall("c1", "n", `{"a":`); p.Input != nil || !strings.HasPrefix(p.Text, `{"a":`) {
		t.Fatalf("bad arguments: %+v", p)
	}
	// JSON that is not an object is no input any wire takes back
	for _, args := range []string{`[1]`, `"x"`, `null`, ` 7 `} {
		if p := ToolCall("c1", "n", args); p.Input != nil || p.Text != strings.TrimSpace(args) {
			t.Errorf("arguments %s: part %+v; want them kept as text, no input", args, p)
		}
	}
}

func TestToolCallInputKeepsTheArgumentsBytesAsTheInputUncopied(t *testing.T) {
	buf := []byte(` {"a":1} {"b":2}`)
	p := ToolCallInput("c1", "n", buf[:9:9])
	if string(p.Input) != `{"a":1}` || p.Text != "" {
		t.Fatalf("part %+v", p)
	}
	if &p.Input[0] != &buf[1] {
		t.Fatal("the arguments were copied")
	}
	// each part is its own: appending to one leaves the next as it was
	_ = append(p.Input, 'x')
	if string(buf[9:]) != `{"b":2}` {
		t.Fatalf("an append to the input wrote into the buffer after it: %q", buf)
	}
	for _, args := range []string{"", `{"a":`, `[1]`, ` 7 `, `{"a":1}`} {
		want, got := ToolCall("c1", "n\xff", args), ToolCallInput("c1", "n\xff", []byte(args))
		if string(got.Input) != string(want.Input) || (got.Input == nil) != (want.Input == nil) || got.Text != want.Text || got.Name != want.Name {
			t.Errorf("arguments %q: %+v, ToolCall's %+v", args, got, want)
		}
	}
}
