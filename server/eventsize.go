package server

import (
	"encoding/json"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/myelin-run/myelin/result"
)

// MaxEventBytes bounds the data of one event the server appends: what a
// watcher's write holds at once, and a log's unit of memory. A long
// answer streams as many deltas, so it passes whole; an event over it is
// bounded (bounded), and the stored messages hold what it reported.
const MaxEventBytes = 1 << 20

// deltaPiece is the most bytes of text one piece of a split delta
// carries: escaped as JSON (at most 6 bytes a byte, \u0001), it stays
// under MaxEventBytes with its other fields.
const deltaPiece = MaxEventBytes / 8

// bounded is the data of the events that report v, an event of type typ:
// v encoded as JSON, one event, when it fits MaxEventBytes. A model.delta
// that does not is split into deltas whose texts join to its own, in
// order; any other event has its longest fields cut (cutFields).
func bounded(typ string, v any) ([]json.RawMessage, error) {
	data, err := result.JSON(v) // texts as themselves: no HTML escaping
	if err != nil {
		return nil, fmt.Errorf("encoding a %s event: %w", typ, err)
	}
	if len(data) <= MaxEventBytes {
		return []json.RawMessage{data}, nil
	}
	if d, ok := v.(modelDeltaEvent); ok {
		var out []json.RawMessage
		for text := d.Text; text != ""; {
			n := min(len(text), deltaPiece)
			for n < len(text) && n > 0 && !utf8.RuneStart(text[n]) {
				n-- // a piece ends between characters
			}
			piece := d
			piece.Text = text[:n]
			data, err := result.JSON(piece)
			if err != nil {
				return nil, fmt.Errorf("encoding a piece of a %s event: %w", typ, err)
			}
			out = append(out, data)
			text = text[n:]
		}
		return out, nil
	}
	data, err = cutFields(data)
	if err != nil {
		return nil, fmt.Errorf("cutting a %s event of %d bytes to %d: %w", typ, len(data), MaxEventBytes, err)
	}
	return []json.RawMessage{data}, nil
}

// cutFields bounds an event's data, a JSON object over MaxEventBytes: its
// longest field is cut — a string to its start, whole characters, any
// other value left out — until the object fits, and "cut" names the
// fields cut, longest first. The fields that fit are as they were.
func cutFields(data json.RawMessage) (json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return nil, fmt.Errorf("an event is not a JSON object: %w", err)
	}
	var cut []string
	size := len(data)
	const room = 1 << 10 // for "cut" and the names in it
	for size > MaxEventBytes-room && len(fields) > 0 {
		longest := ""
		for k, v := range fields {
			if longest == "" || len(v) > len(fields[longest]) || len(v) == len(fields[longest]) && k < longest {
				longest = k
			}
		}
		v := fields[longest]
		over := size - (MaxEventBytes - room)
		var s string
		if len(v) > over && json.Unmarshal(v, &s) == nil && s != "" {
			short, err := cutString(s, len(v)-over)
			if err != nil {
				return nil, err
			}
			fields[longest] = short
			size -= len(v) - len(short)
		} else {
			delete(fields, longest)
			size -= len(v) + len(longest) + 4 // "k":v,
		}
		if !slices.Contains(cut, longest) {
			cut = append(cut, longest)
		}
	}
	fields["cut"], _ = json.Marshal(cut)
	return result.JSON(fields)
}

// cutString is the longest start of s, whole characters, whose JSON
// encoding is at most n bytes.
func cutString(s string, n int) (json.RawMessage, error) {
	end := min(len(s), n)
	for {
		for end > 0 && end < len(s) && !utf8.RuneStart(s[end]) {
			end--
		}
		enc, err := result.JSON(s[:end])
		if err != nil {
			return nil, fmt.Errorf("encoding a cut text: %w", err)
		}
		if len(enc) <= n || end == 0 {
			return enc, nil
		}
		// escapes made it longer: shorten by what is over, at least a byte
		end -= max(1, (len(enc)-n+5)/6)
	}
}
