package storetest

import (
	"encoding/json"
	"fmt"

	"github.com/myelin-run/myelin/history"
)

// ShortFile is the text of ReadRound's result unless it is given another:
// a short file's lines, as workspace--read gives them.
const ShortFile = "     1\tpackage main\n     2\t\n     3\tfunc main() {}\n[lines 1-3 of 3 in src/main.go; end of file]"

// ReadRound is round i of a long stored conversation as the resume and
// read benchmarks store it (~220 bytes a message): an answer calling
// workspace--read, and the call's result, text.
func ReadRound(i int, text string) (call, result history.Message) {
	id := fmt.Sprintf("toolu_%d", i)
	call = history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: "Let me read the next file."},
		{Type: history.ToolCallPart, CallID: id, Name: "workspace--read", Input: json.RawMessage(`{"path":"src/main.go"}`)}}}
	result = history.Message{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: id, Text: text}}}
	return call, result
}
