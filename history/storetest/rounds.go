package storetest

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/myelin-run/myelin/history"
)

// ShortFile is the text of a round's result (AppendReadRounds) unless it is given another:
// a short file's lines, as workspace--read gives them.
const ShortFile = "     1\tpackage main\n     2\t\n     3\tfunc main() {}\n[lines 1-3 of 3 in src/main.go; end of file]"

// readRound is round i of a long stored conversation as the resume and
// read benchmarks store it (~220 bytes a message): an answer calling
// workspace--read, and the call's result, text.
func readRound(i int, text string) (call, result history.Message) {
	id := fmt.Sprintf("toolu_%d", i)
	call = history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: "Let me read the next file."},
		{Type: history.ToolCallPart, CallID: id, Name: "workspace--read", Input: json.RawMessage(`{"path":"src/main.go"}`)}}}
	result = history.Message{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: id, Text: text}}}
	return call, result
}

// AppendReadRounds appends to conversation id of s the rounds (readRound)
// 0, 2, 4… below messages (so messages of them, rounded up to even), a
// thousand messages to an Append: the long conversations the resume and
// read benchmarks read back. text gives round i's result (nil:
// ShortFile).
func AppendReadRounds(ctx context.Context, s history.Store, id string, messages int, text func(i int) string) error {
	batch := make([]history.Message, 0, min(messages+1, 1000))
	for i := 0; i < messages; i += 2 {
		t := ShortFile
		if text != nil {
			t = text(i)
		}
		call, result := readRound(i, t)
		if batch = append(batch, call, result); len(batch) >= 1000 {
			if err := s.Append(ctx, id, batch...); err != nil {
				return fmt.Errorf("appending messages %d to %d: %w", i+3-len(batch), i+2, err)
			}
			batch = batch[:0]
		}
	}
	if len(batch) == 0 {
		return nil
	}
	if err := s.Append(ctx, id, batch...); err != nil {
		return fmt.Errorf("appending the last %d messages: %w", len(batch), err)
	}
	return nil
}
