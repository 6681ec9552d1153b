package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// A whole answer (Config.NoStream) is posted by the Senders' Whole, with
// the streamed requests' headers, rules and limiter, and its body decoded
// here into completion — only the fields the wire reads — read as
// openai-go read them into its ChatCompletion, which the SDK no longer
// does: TestAWholeAnswerIsDecodedAsTheSDKDecodedIt holds the two equal on
// the answers in testdata/completions.

// completion is the part of a chat.completion the wire reads.
type completion struct {
	Choices []struct {
		Message struct {
			Content   content `json:"content"` // a string, or a list of parts
			ToolCalls []struct {
				ID       sdkString `json:"id"`
				Function struct {
					Name      sdkString `json:"name"`
					Arguments sdkString `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason sdkString `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens        sdkInt `json:"prompt_tokens"`
		CompletionTokens    sdkInt `json:"completion_tokens"`
		PromptTokensDetails struct {
			CachedTokens sdkInt `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

// decodeCompletion decodes a whole answer's body, its first JSON value as
// the SDK decoded it (encoding/json's Decoder: what follows is not read),
// in the SDK's words when it is not JSON.
func decodeCompletion(body []byte) (completion, error) {
	var c completion
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&c); err != nil {
		return c, fmt.Errorf("error parsing response json: %w", err)
	}
	return c, nil
}

// whole reads a decoded whole answer into a: its first choice's text,
// reasoning, tool calls and finish reason, and its usage.
func (a *accumulator) whole(c *completion) error {
	if len(c.Choices) == 0 {
		return errors.New("openai: the answer has no choices")
	}
	ch := &c.Choices[0]
	cont := ch.Message.Content
	a.text.WriteString(string(cont.Text))
	if cont.Thinking != "" {
		a.think(string(cont.Thinking))
	}
	a.skip(cont.Skipped)
	for _, tc := range ch.Message.ToolCalls {
		a.calls = append(a.calls, &call{id: string(tc.ID), name: string(tc.Function.Name)})
		a.calls[len(a.calls)-1].args.WriteString(string(tc.Function.Arguments))
	}
	a.stop = string(ch.FinishReason)
	u := c.Usage
	a.setUsage(int(u.PromptTokens), int(u.CompletionTokens), int(u.PromptTokensDetails.CachedTokens))
	return nil
}

// sdkString is a string field as the SDK reads one: a JSON string's
// value; a number, true or false, an object or an array as its text (a
// number in a float's shortest form); "" for null.
type sdkString string

// UnmarshalJSON reads raw as the SDK reads a string field.
func (s *sdkString) UnmarshalJSON(raw []byte) error {
	if len(raw) > 0 && raw[0] == '"' {
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			return err
		}
		*s = sdkString(v)
		return nil
	}
	*s = sdkString(text(raw))
	return nil
}

// sdkInt is an integer field as the SDK reads one: a number, a float
// cut to its integer part; a string of a number as that number; 0 for
// null, true or false (1 for true) and anything else.
type sdkInt int64

// UnmarshalJSON reads raw as the SDK reads an integer field.
func (n *sdkInt) UnmarshalJSON(raw []byte) error {
	s := string(raw)
	switch {
	case s == "true":
		*n = 1
		return nil
	case len(raw) > 0 && raw[0] == '"':
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			return err
		}
		s = v
	}
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		*n = sdkInt(i)
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		*n = 0
		return nil
	}
	*n = sdkInt(f)
	return nil
}
