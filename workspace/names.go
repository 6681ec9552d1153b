package workspace

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// File names are shown by the tools (list, glob, grep, read's footer) and
// given back to them as paths. A name that could forge a line of output or
// that JSON cannot carry is shown quoted, and the quoted form is accepted
// back:
//
//   - a name is shown as it is when it is plain: valid UTF-8, every
//     character printable (unicode.IsPrint: no control character such as a
//     newline or tab, no format character such as a bidi override), no
//     " -> " (which list writes between a link and its target), and no
//     double quote at the start of it or of any of its components;
//   - any other name is shown as a Go string literal (strconv.Quote):
//     "nl\nfake.txt", "caf\xe9.txt" — JSON's escapes, plus \xNN for a byte
//     that is not UTF-8, which no JSON string can carry;
//   - a path given to read, grep, list, write or edit may be such a literal as a whole
//     ("sub/nl\nx.txt") or in any of its components (sub/"nl\nx.txt"): a
//     path or component that starts and ends with a double quote is
//     unquoted first. A file whose name really starts and ends with a
//     double quote is therefore given quoted too, as it is shown.

// showName is a workspace path or name as the tools write it: itself when
// it is plain, else quoted (see above). It must not be used to build a path
// for the file system; pathArg reverses it.
func showName(p string) string {
	if plainName(p) {
		return p
	}
	return strconv.Quote(p)
}

// plainName reports whether a name is shown as it is.
func plainName(p string) bool {
	if strings.HasPrefix(p, `"`) || strings.Contains(p, `/"`) || strings.Contains(p, " -> ") {
		return false
	}
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRuneInString(p[i:])
		if r == utf8.RuneError && size == 1 || !unicode.IsPrint(r) {
			return false
		}
		i += size
	}
	return true
}

// pathArg turns a path given to a tool back into the path it names,
// unquoting a quoted path or quoted components (see above), then checks it
// as Rel does. A quoted form that does not unquote is an error that says
// so.
func pathArg(p string) (string, error) {
	if quoted(p) {
		if u, err := strconv.Unquote(p); err == nil {
			return Rel(u)
		}
		if !strings.Contains(p, `"/"`) { // not quoted components either
			return "", fmt.Errorf("path %s starts and ends with a double quote but is not a valid quoted name (a Go string literal such as \"a\\nb.txt\")", short(p))
		}
	}
	if strings.Contains(p, `"`) {
		parts := strings.Split(p, "/")
		for i, part := range parts {
			if !quoted(part) {
				continue
			}
			u, err := strconv.Unquote(part)
			if err != nil {
				return "", fmt.Errorf("path %s: the component %s starts and ends with a double quote but is not a valid quoted name (a Go string literal such as \"a\\nb.txt\"): %w", short(p), short(part), err)
			}
			if u == "" || strings.Contains(u, "/") {
				return "", fmt.Errorf("path %s: the quoted component %s is not one file name", short(p), short(part))
			}
			parts[i] = u
		}
		p = strings.Join(parts, "/")
	}
	return Rel(p)
}

func quoted(s string) bool { return len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' }
