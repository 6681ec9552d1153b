package window

import (
	"fmt"
	"strings"

	"github.com/myelin-run/myelin/result"
)

// ClearedResult is the text a request sends in place of a tool result
// taken out of it: one line saying so, with the size of what was taken out
// (for a spilled result, the head the model saw: the file holds more) and
// the workspace file holding it whole, and a second with the ready
// workspace--read call. images are the files holding its images, if it had
// any. whyNotKept, when not "", says why there is no file (path is then
// ""), so the model knows the result cannot be read again. The text is stored with the decision (history.Cleared.Text), so a
// later change of these words never changes a stored conversation's
// requests.
func ClearedResult(chars int, isError bool, path string, images []string, whyNotKept string) string {
	what := "a tool result"
	if isError {
		what = "an error result"
	}
	var b strings.Builder
	if path == "" {
		fmt.Fprintf(&b, "[myelin: %s (%s characters of it were here) was cleared here to save room in the context window; it could not be kept: %s.]", what, thousands(chars), whyNotKept)
		return b.String()
	}
	fmt.Fprintf(&b, "[myelin: %s (%s characters of it were here) was cleared here to save room in the context window; it is whole in the workspace file %s", what, thousands(chars), path)
	if len(images) > 0 {
		fmt.Fprintf(&b, ", and its images in %s", strings.Join(images, ", "))
	}
	b.WriteString(".\nRead it: workspace--read ")
	b.Write(readCall(path))
	b.WriteString("]")
	return b.String()
}

// ClearedInput is the JSON object a request sends as the input of a tool
// call whose input was taken out of it: one field, myelin_cleared, saying so
// with the size and the file holding the input whole, and the ready
// workspace--read call.
func ClearedInput(chars int, path string) string {
	note := fmt.Sprintf("[myelin: this call's input of %s characters was cleared here to save room in the context window; it is whole in the workspace file %s. Read it: workspace--read %s]",
		thousands(chars), path, readCall(path))
	raw, err := result.JSON(struct {
		Cleared string `json:"myelin_cleared"`
	}{note})
	if err != nil {
		panic(err) // a struct of one string always encodes
	}
	return string(raw)
}

// placeholderBytes is about how long a placeholder is, for estimating
// what taking a result out saves before its file is named.
const placeholderBytes = 330

func readCall(path string) []byte {
	raw, err := result.JSON(struct {
		Path string `json:"path"`
	}{path})
	if err != nil {
		panic(err)
	}
	return raw
}

// thousands writes n with commas between groups of three digits.
func thousands(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
