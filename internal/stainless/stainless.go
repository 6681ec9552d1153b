// Package stainless owns what the Stainless-generated Go SDKs
// (openai-go, anthropic-sdk-go) put on every request they send, for the
// wires that build those requests by hand so as not to link an SDK: the
// headers both send (Header: Accept, User-Agent, the X-Stainless-* set,
// and the timeout's, SetTimeout), the lines of a *_CUSTOM_HEADERS
// variable (CustomHeaders), the base URL a path is joined under (BaseURL,
// as option.WithBaseURL makes it), and how an SDK-like API error is
// printed without its request's headers (FormatError).
//
// It holds what the two SDKs do alike and nothing that is one SDK's (its
// version, its product's headers, its paths, which environment variables
// it reads, its error's fields and text): those stay in each wire, whose
// tests hold them to the SDK's. It reads no environment and sends nothing.
package stainless

import (
	"fmt"
	"net/http"
	"net/url"
	"runtime"
	"strings"
)

// Header is the header set both SDKs begin a request with: Accept
// (application/json), User-Agent (product, "/Go " and version, e.g.
// "OpenAI/Go 3.102.0"), X-Stainless-Lang, -Package-Version (version),
// -Os, -Arch, -Runtime and -Runtime-Version of this binary, -Retry-Count
// "0", and -Timeout "0" (SetTimeout's to settle once the caller's and the
// environment's headers are set). A caller adds its own after it.
func Header(product, version string) http.Header {
	h := make(http.Header, 16)
	h.Set("Accept", "application/json")
	h.Set("X-Stainless-Retry-Count", "0")
	h.Set("X-Stainless-Timeout", "0")
	h.Set("User-Agent", product+"/Go "+version)
	h.Set("X-Stainless-Lang", "go")
	h.Set("X-Stainless-Package-Version", version)
	h.Set("X-Stainless-Os", OS(runtime.GOOS))
	h.Set("X-Stainless-Arch", Arch(runtime.GOARCH))
	h.Set("X-Stainless-Runtime", "go")
	h.Set("X-Stainless-Runtime-Version", runtime.Version())
	return h
}

// SetTimeout settles h's X-Stainless-Timeout when it is still Header's
// "0" (no custom header changed it): seconds, the request's timeout, or
// no header for "" (a request without one, as the SDKs send it).
func SetTimeout(h http.Header, seconds string) {
	if h.Get("X-Stainless-Timeout") != "0" {
		return
	}
	if seconds != "" {
		h.Set("X-Stainless-Timeout", seconds)
	} else {
		h.Del("X-Stainless-Timeout")
	}
}

// CustomHeaders sets in h the headers of lines, a *_CUSTOM_HEADERS
// variable's value: one "Name: value" a line, both trimmed of spaces,
// each replacing any value h had; a line without a colon is ignored.
func CustomHeaders(h http.Header, lines string) {
	for _, line := range strings.Split(lines, "\n") {
		if name, value, ok := strings.Cut(line, ":"); ok {
			h.Set(strings.TrimSpace(name), strings.TrimSpace(value))
		}
	}
}

// BaseURL is base parsed, a path under it to be joined with its Parse:
// a non-empty path that does not end in "/" gets one, as
// option.WithBaseURL adds it. Its error is url.Parse's.
func BaseURL(base string) (*url.URL, error) {
	b, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	if b.Path != "" && !strings.HasSuffix(b.Path, "/") {
		b.Path += "/"
	}
	return b, nil
}

// FormatError prints text, an API error's text, for any verb of a Format
// method (with its flags for %s, %q, %x and %X; any other verb as %s),
// so that %v, %+v or %#v of the error shows its text and not its fields
// (the request's header, its API key): the SDKs' errors printed their
// whole struct.
func FormatError(s fmt.State, verb rune, text string) {
	switch verb {
	case 's', 'q', 'x', 'X':
	default:
		verb = 's'
	}
	_, _ = fmt.Fprintf(s, fmt.FormatString(s, verb), text)
}

// OS is the SDKs' name for the operating system goos (X-Stainless-Os).
func OS(goos string) string {
	switch goos {
	case "ios":
		return "iOS"
	case "android":
		return "Android"
	case "darwin":
		return "MacOS"
	case "windows":
		return "Windows"
	case "freebsd":
		return "FreeBSD"
	case "openbsd":
		return "OpenBSD"
	case "linux":
		return "Linux"
	}
	return "Other:" + goos
}

// Arch is the SDKs' name for the architecture goarch (X-Stainless-Arch).
func Arch(goarch string) string {
	switch goarch {
	case "386":
		return "x32"
	case "amd64":
		return "x64"
	case "arm", "arm64":
		return goarch
	}
	return "other:" + goarch
}
