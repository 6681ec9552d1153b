package stainless

import (
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
)

// OS and Arch are the SDKs' names of GOOS and GOARCH, Other:/other: and
// the Go name for any they do not name.
func TestOSAndArchAreTheSDKsNames(t *testing.T) {
	for _, tc := range []struct{ goos, want string }{
		{"ios", "iOS"}, {"android", "Android"}, {"darwin", "MacOS"}, {"windows", "Windows"},
		{"freebsd", "FreeBSD"}, {"openbsd", "OpenBSD"}, {"linux", "Linux"},
		{"netbsd", "Other:netbsd"}, {"plan9", "Other:plan9"},
	} {
		if got := OS(tc.goos); got != tc.want {
			t.Errorf("OS(%q) = %q, want %q", tc.goos, got, tc.want)
		}
	}
	for _, tc := range []struct{ goarch, want string }{
		{"386", "x32"}, {"amd64", "x64"}, {"arm", "arm"}, {"arm64", "arm64"},
		{"riscv64", "other:riscv64"}, {"ppc64le", "other:ppc64le"},
	} {
		if got := Arch(tc.goarch); got != tc.want {
			t.Errorf("Arch(%q) = %q, want %q", tc.goarch, got, tc.want)
		}
	}
}

// Header is the set both SDKs begin with, no more.
func TestHeaderIsTheSetBothSDKsSend(t *testing.T) {
	want := http.Header{
		"Accept":                      {"application/json"},
		"User-Agent":                  {"Acme/Go 1.2.3"},
		"X-Stainless-Lang":            {"go"},
		"X-Stainless-Package-Version": {"1.2.3"},
		"X-Stainless-Os":              {OS(runtime.GOOS)},
		"X-Stainless-Arch":            {Arch(runtime.GOARCH)},
		"X-Stainless-Runtime":         {"go"},
		"X-Stainless-Runtime-Version": {runtime.Version()},
		"X-Stainless-Retry-Count":     {"0"},
		"X-Stainless-Timeout":         {"0"},
	}
	if got := Header("Acme", "1.2.3"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Header:\n %v\nwant\n %v", got, want)
	}
}

// SetTimeout settles a timeout still Header's "0", and leaves one a
// custom header set.
func TestSetTimeoutSettlesOnlyTheDefault(t *testing.T) {
	for _, tc := range []struct {
		before, seconds string
		want            []string
	}{
		{"0", "", nil},
		{"0", "600", []string{"600"}},
		{"30", "", []string{"30"}},
		{"30", "600", []string{"30"}},
	} {
		h := http.Header{"X-Stainless-Timeout": {tc.before}}
		SetTimeout(h, tc.seconds)
		if got := h.Values("X-Stainless-Timeout"); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%q then %q: %q, want %q", tc.before, tc.seconds, got, tc.want)
		}
	}
}

// CustomHeaders sets each "Name: value" line, trimmed, over what was
// there; a line without a colon is nothing.
func TestCustomHeadersAreNameValueLines(t *testing.T) {
	for _, tc := range []struct {
		lines string
		want  http.Header
	}{
		{"X-A: 1\nx-b:2", http.Header{"Accept": {"x"}, "X-A": {"1"}, "X-B": {"2"}}},
		{"Accept: text/plain", http.Header{"Accept": {"text/plain"}}},
		{"  X-A  :  a: b  \r", http.Header{"Accept": {"x"}, "X-A": {"a: b"}}},
		{"no colon\n\n", http.Header{"Accept": {"x"}}},
		{"", http.Header{"Accept": {"x"}}},
	} {
		h := http.Header{"Accept": {"x"}}
		CustomHeaders(h, tc.lines)
		if fmt.Sprint(h) != fmt.Sprint(tc.want) {
			t.Errorf("%q: %v, want %v", tc.lines, h, tc.want)
		}
	}
}

// BaseURL gives a base's path a trailing "/", so that a path joins under
// it rather than beside its last segment.
func TestBaseURLJoinsAPathUnderIt(t *testing.T) {
	for _, tc := range []struct{ base, path, want string }{
		{"https://api.example.com/v1", "chat/completions", "https://api.example.com/v1/chat/completions"},
		{"https://api.example.com/v1/", "chat/completions", "https://api.example.com/v1/chat/completions"},
		{"https://api.example.com", "v1/messages", "https://api.example.com/v1/messages"},
		{"http://127.0.0.1:8080/a/b?x=1", "c", "http://127.0.0.1:8080/a/b/c"},
	} {
		b, err := BaseURL(tc.base)
		if err != nil {
			t.Fatalf("%q: %v", tc.base, err)
		}
		u, err := b.Parse(tc.path)
		if err != nil || u.String() != tc.want {
			t.Errorf("%q + %q: %v (%v), want %s", tc.base, tc.path, u, err, tc.want)
		}
	}
	if _, err := BaseURL("http://[::1"); err == nil {
		t.Error("a base that is not a URL is not an error")
	}
}

// secret is an error whose field holds what must not be printed (as an
// API error's request holds the key).
type secret struct{ Key string }

func (e secret) Error() string                 { return "401 Unauthorized" }
func (e secret) Format(s fmt.State, verb rune) { FormatError(s, verb, e.Error()) }

// FormatError prints the text for every verb, the flags of %s, %q, %x and
// %X kept, never the fields.
func TestFormatErrorPrintsTheTextOnly(t *testing.T) {
	e := secret{Key: "sk-secret"}
	for _, tc := range []struct{ format, want string }{
		{"%v", "401 Unauthorized"},
		{"%+v", "401 Unauthorized"},
		{"%#v", "401 Unauthorized"},
		{"%d", "401 Unauthorized"},
		{"%s", "401 Unauthorized"},
		{"%q", `"401 Unauthorized"`},
		{"%x", fmt.Sprintf("%x", "401 Unauthorized")},
		{"%X", fmt.Sprintf("%X", "401 Unauthorized")},
		{"%20.3s", "                 401"},
	} {
		got := fmt.Sprintf(tc.format, e)
		if got != tc.want || strings.Contains(got, "sk-secret") {
			t.Errorf("%s: %q, want %q", tc.format, got, tc.want)
		}
		if p := fmt.Sprintf(tc.format, &e); p != tc.want {
			t.Errorf("%s of a pointer: %q, want %q", tc.format, p, tc.want)
		}
	}
}
