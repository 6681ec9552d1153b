package openai

import (
	"encoding/json"

	"github.com/myelin-run/myelin/internal/jsonscan"
)

// decodeChunk fills c (reset first) from data, the JSON of one
// chat.completion.chunk, exactly as json.Unmarshal(data, c) would, or
// fails as it does.
//
// It is a scan (jsonscan.Scanner) of the members chunk holds that skips
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
	s := chunkScanner{jsonscan.Scanner{B: data}}
	if s.chunk(c) && s.AtEnd() {
		return nil
	}
	*c = chunk{}
	return json.Unmarshal(data, c)
}

// chunkScanner reads a chunk's JSON. Each method reports whether what it
// read is what it takes; false sends the chunk to json.Unmarshal.
type chunkScanner struct{ jsonscan.Scanner }

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

// errorKey is the index of "error" in chunkKeys.
const errorKey = 3

func (s *chunkScanner) chunk(c *chunk) bool {
	return s.Members(chunkKeys, errorKey, func(i int) bool {
		switch i {
		case 0:
			return s.string(&c.Object)
		case 1:
			return s.Array(func() bool {
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
	return s.Members(choiceKeys, -1, func(i int) bool {
		switch i {
		case 0:
			return s.ReadInt(&ch.Index)
		case 1:
			return s.Members(deltaKeys, -1, func(i int) bool {
				if i == 0 {
					// a string; a list of parts goes to json.Unmarshal
					return s.ReadText(&ch.Delta.Content.Text)
				}
				d := &ch.Delta
				return s.Array(func() bool {
					d.ToolCalls = append(d.ToolCalls, toolCall{})
					return s.toolCall(&d.ToolCalls[len(d.ToolCalls)-1])
				}, func() { d.ToolCalls = []toolCall{} })
			})
		}
		return s.string(&ch.FinishReason)
	})
}

func (s *chunkScanner) toolCall(tc *toolCall) bool {
	return s.Members(callKeys, -1, func(i int) bool {
		switch i {
		case 0:
			return s.ReadInt(&tc.Index)
		case 1:
			return s.string(&tc.ID)
		}
		return s.Members(functionKeys, -1, func(i int) bool {
			if i == 0 {
				return s.string(&tc.Function.Name)
			}
			return s.string(&tc.Function.Arguments)
		})
	})
}

func (s *chunkScanner) usage(u *usage) bool {
	return s.Members(usageKeys, -1, func(i int) bool {
		switch i {
		case 0:
			return s.ReadInt(&u.PromptTokens)
		case 1:
			return s.ReadInt(&u.CompletionTokens)
		}
		return s.Members(detailsKeys, -1, func(int) bool { return s.ReadInt(&u.PromptTokensDetails.CachedTokens) })
	})
}

// finishReasons are the values of finish_reason, kept as one string each
// so that a chunk does not allocate them.
var finishReasons = []string{"stop", "tool_calls", "length", "content_filter", "function_call", "chat.completion.chunk"}

// string reads a string into dst as jsonscan.Scanner.ReadString does, a
// finish reason as one of finishReasons, so that a chunk does not
// allocate it.
func (s *chunkScanner) string(dst *string) bool { return s.ReadName(dst, finishReasons) }
