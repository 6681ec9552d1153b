package openai

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/myelin-run/myelin/internal/jsonscan"
	"github.com/myelin-run/myelin/internal/jsonstring"
)

// content is a message's or a delta's content as a server of this wire
// sends it: a string (OpenAI's form), or a list of parts — Mistral's
// reasoning models (magistral) stream
// [{"type":"thinking","thinking":[{"type":"text","text":...}]}] and then
// [{"type":"text","text":...}]. Text parts are the text, thinking parts
// the reasoning; parts of other types are passed over, counted by type
// (Skipped). null leaves it as it is, as for a string.
type content struct {
	Text     jsonstring.Text
	Thinking jsonstring.Text
	Skipped  map[string]int
}

// contentPart is one part of a content list.
type contentPart struct {
	Type     string          `json:"type"`
	Text     jsonstring.Text `json:"text"`
	Thinking json.RawMessage `json:"thinking"` // a list of text parts, or a string
}

// UnmarshalJSON reads a string as jsonstring.Text does, or a list of
// parts; anything else is the error encoding/json gives for a string.
func (c *content) UnmarshalJSON(raw []byte) error {
	s := jsonscan.Scanner{B: raw}
	s.WS()
	if s.I >= len(raw) || raw[s.I] != '[' {
		return c.Text.UnmarshalJSON(raw)
	}
	var parts []contentPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return err
	}
	for _, p := range parts {
		switch p.Type {
		case "text":
			c.Text += p.Text
		case "thinking":
			t, err := thinkingText(p.Thinking)
			if err != nil {
				return fmt.Errorf("a thinking part: %w", err)
			}
			c.Thinking += t
		default:
			if c.Skipped == nil {
				c.Skipped = map[string]int{}
			}
			c.Skipped[p.Type]++
		}
	}
	return nil
}

// thinkingText is the text of a thinking part's "thinking": its text
// parts joined, or the string it is.
func thinkingText(raw json.RawMessage) (jsonstring.Text, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var t jsonstring.Text
	if raw[0] == '"' {
		err := t.UnmarshalJSON(raw)
		return t, err
	}
	var parts []contentPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", err
	}
	for _, p := range parts {
		if p.Type == "text" || p.Type == "" {
			t += p.Text
		}
	}
	return t, nil
}

// skipped is the words for the parts an answer's content had of types
// this wire does not read: "2 image, 1 audio".
func skipped(by map[string]int) string {
	kinds := make([]string, 0, len(by))
	for k := range by {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for i, k := range kinds {
		kinds[i] = fmt.Sprintf("%d %q", by[k], k)
	}
	return strings.Join(kinds, ", ")
}
