package openai

import (
	"bytes"
	"encoding/json"

	"github.com/myelin-run/myelin/provider"
)

// decodeChunk fills c (reset first) from data, the JSON of one
// chat.completion.chunk, exactly as json.Unmarshal(data, c) would, or
// fails as it does.
//
// It is a scan (provider.Scanner) of the members chunk holds that skips
// the rest without building anything: encoding/json checked each chunk
// whole, then decoded it by reflection, which was most of what reading a
// light round's stream cost (BenchmarkStream). Whatever the scan does not
// take as plainly as encoding/json would — a string with an escape or not
// valid UTF-8, a number that is not a small integer, a key in another
// case (encoding/json matches keys without case), a key given twice, a
// null where it is not a no-op, anything malformed — it hands to
// json.Unmarshal: for that string alone, or for the whole chunk. It must
// never accept a chunk json.Unmarshal refuses, nor read one otherwise
// (FuzzDecodeChunkIsEncodingJSONs).
func decodeChunk(data []byte, c *chunk) error {
	*c = chunk{}
	s := chunkScanner{provider.Scanner{B: data}}
	if s.chunk(c) && s.AtEnd() {
		return nil
	}
	*c = chunk{}
	return json.Unmarshal(data, c)
}

// chunkScanner reads a chunk's JSON. Each method reports whether what it
// read is what it takes; false sends the chunk to json.Unmarshal.
type chunkScanner struct{ provider.Scanner }

// The keys of each object the scan reads members of, in the order of the
// bits that mark a key as seen (a key seen twice goes to json.Unmarshal,
// which decodes the second value over the first).
var (
	chunkKeys    = []string{"object", "choices", "usage", "error"} // errorKey last
	choiceKeys   = []string{"index", "delta", "finish_reason"}
	deltaKeys    = []string{"content", "tool_calls"}
	callKeys     = []string{"index", "id", "function"}
	functionKeys = []string{"name", "arguments"}
	usageKeys    = []string{"prompt_tokens", "completion_tokens", "prompt_tokens_details"}
	detailsKeys  = []string{"cached_tokens"}
)

// object reads an object whose members keys name, each known one by
// known(i) with the scan at its value. A null for one is a no-op, as it
// is in encoding/json for each field but chunk's Error (a
// json.RawMessage keeps it), whose null object passes to known as any
// other value. Other keys' values are skipped, but for one encoding/json
// would match to a known key without case.
func (s *chunkScanner) object(keys []string, known func(i int) bool) bool {
	var seen uint
	return s.Object(func(key []byte) bool {
		i := indexOf(keys, key)
		if i < 0 {
			for _, k := range keys {
				if bytes.EqualFold(key, []byte(k)) {
					return false
				}
			}
			return s.Skip()
		}
		if seen&(1<<i) != 0 {
			return false
		}
		seen |= 1 << i
		if &keys[i] != &chunkKeys[errorKey] && s.IsNull() {
			return true
		}
		return known(i)
	})
}

// errorKey is the index of "error" in chunkKeys.
const errorKey = 3

func indexOf(keys []string, key []byte) int {
	for i, k := range keys {
		if string(key) == k {
			return i
		}
	}
	return -1
}

func (s *chunkScanner) chunk(c *chunk) bool {
	return s.object(chunkKeys, func(i int) bool {
		switch i {
		case 0:
			return s.string(&c.Object)
		case 1:
			return s.array(func() bool {
				c.Choices = append(c.Choices, choice{})
				return s.choice(&c.Choices[len(c.Choices)-1])
			}, func() { c.Choices = []choice{} })
		case 2:
			c.Usage = new(usage)
			return s.usage(c.Usage)
		}
		start := s.I
		if !s.Skip() {
			return false
		}
		c.Error = append(json.RawMessage(nil), s.B[start:s.I]...)
		return true
	})
}

func (s *chunkScanner) choice(ch *choice) bool {
	return s.object(choiceKeys, func(i int) bool {
		switch i {
		case 0:
			return s.int(&ch.Index)
		case 1:
			return s.object(deltaKeys, func(i int) bool {
				if i == 0 {
					return s.ReadText(&ch.Delta.Content)
				}
				d := &ch.Delta
				return s.array(func() bool {
					d.ToolCalls = append(d.ToolCalls, toolCall{})
					return s.toolCall(&d.ToolCalls[len(d.ToolCalls)-1])
				}, func() { d.ToolCalls = []toolCall{} })
			})
		}
		return s.string(&ch.FinishReason)
	})
}

func (s *chunkScanner) toolCall(tc *toolCall) bool {
	return s.object(callKeys, func(i int) bool {
		switch i {
		case 0:
			return s.int(&tc.Index)
		case 1:
			return s.string(&tc.ID)
		}
		return s.object(functionKeys, func(i int) bool {
			if i == 0 {
				return s.string(&tc.Function.Name)
			}
			return s.string(&tc.Function.Arguments)
		})
	})
}

func (s *chunkScanner) usage(u *usage) bool {
	return s.object(usageKeys, func(i int) bool {
		switch i {
		case 0:
			return s.int(&u.PromptTokens)
		case 1:
			return s.int(&u.CompletionTokens)
		}
		return s.object(detailsKeys, func(int) bool { return s.int(&u.PromptTokensDetails.CachedTokens) })
	})
}

// array reads an array, each element by elem; an empty one is made by
// empty, as encoding/json makes an empty slice, not nil. A null element
// goes to json.Unmarshal.
func (s *chunkScanner) array(elem func() bool, empty func()) bool {
	if !s.Next('[') {
		return false
	}
	if s.Next(']') {
		empty()
		return true
	}
	for {
		if !elem() {
			return false
		}
		if !s.Next(',') {
			return s.Next(']')
		}
	}
}

func (s *chunkScanner) int(dst *int) bool {
	var n int64
	if !s.Int(&n) {
		return false
	}
	*dst = int(n)
	return true
}

// finishReasons are the values of finish_reason, kept as one string each
// so that a chunk does not allocate them.
var finishReasons = []string{"stop", "tool_calls", "length", "content_filter", "function_call", "chat.completion.chunk"}

// string reads a string into dst as provider.Scanner.ReadString does, a
// finish reason as one of finishReasons, so that a chunk does not
// allocate it.
func (s *chunkScanner) string(dst *string) bool {
	start := s.I
	if raw, ok := s.PlainString(); ok {
		for _, r := range finishReasons {
			if string(raw) == r {
				*dst = r
				return true
			}
		}
		*dst = string(raw)
		return true
	}
	s.I = start
	return s.ReadString(dst)
}
