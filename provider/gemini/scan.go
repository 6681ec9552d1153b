package gemini

import (
	"bytes"
	"encoding/json"

	"github.com/myelin-run/myelin/internal/jsonscan"
)

// unmarshalChunk fills c (reset first) from data, the JSON of one chunk,
// exactly as json.Unmarshal(data, c) would, or fails as it does.
//
// It scans (jsonscan.Scanner) the members chunk holds and passes over the
// rest without building anything: encoding/json checked each chunk whole
// and then decoded it by reflection, about half of what reading a light
// round's answer cost (BenchmarkRead). What the scan does not take as
// plainly as encoding/json — a string with an escape or bytes not UTF-8,
// a number that is not a small integer, a key in another case (encoding/json
// matches keys without case) or given twice, a null element of an array,
// the rare promptFeedback and error objects, anything malformed — sends the
// string alone, or the whole chunk, to json.Unmarshal. It must never accept
// a chunk json.Unmarshal refuses, nor read one otherwise
// (FuzzDecodeChunkIsEncodingJSONs).
func unmarshalChunk(data []byte, c *chunk) error {
	*c = chunk{}
	s := chunkScan{jsonscan.Scanner{B: data}}
	if s.chunk(c) && s.AtEnd() {
		return nil
	}
	*c = chunk{}
	return json.Unmarshal(data, c)
}

// The JSON names of the fields of each struct the scan fills, all of
// them: a key that is one of them but for case goes to json.Unmarshal.
var (
	chunkFields     = []string{"candidates", "usageMetadata", "promptFeedback", "error"}
	candidateFields = []string{"content", "finishReason"}
	contentFields   = []string{"parts"}
	partFields      = []string{"text", "thought", "thoughtSignature", "functionCall"}
	callFields      = []string{"id", "name", "args"}
	usageFields     = []string{"promptTokenCount", "cachedContentTokenCount", "candidatesTokenCount", "thoughtsTokenCount"}
)

// emptyArgs is the arguments of a call that has none, shared by every
// chunk that says so (nothing writes to a chunk's Args).
var emptyArgs = json.RawMessage("{}")[:2:2]

// chunkScan reads a chunk's JSON; each method reports whether it took
// what it read, false sending the chunk to json.Unmarshal.
type chunkScan struct{ jsonscan.Scanner }

// fields reads an object into a struct whose fields' JSON names are
// names: take(i) reads the value of names[i] (a null included: each
// field's reader says what a null does to it). A key given twice, or
// that is a name but for case, is false; any other key's value is
// passed over.
func (s *chunkScan) fields(names []string, take func(i int) bool) bool {
	var taken uint
	return s.Object(func(key []byte) bool {
		for i, name := range names {
			if string(key) != name {
				continue
			}
			if taken&(1<<i) != 0 {
				return false // encoding/json decodes the second into the first
			}
			taken |= 1 << i
			return take(i)
		}
		for _, name := range names {
			if bytes.EqualFold(key, []byte(name)) {
				return false
			}
		}
		return s.Skip()
	})
}

// list reads an array into *dst, each element by read; a null leaves
// *dst nil, and an empty array makes it empty, not nil, as encoding/json
// does. A null element is false (read sees no object).
func list[T any](s *chunkScan, dst *[]T, read func(*T) bool) bool {
	if s.IsNull() {
		return true
	}
	if !s.Next('[') {
		return false
	}
	*dst = []T{}
	if s.Next(']') {
		return true
	}
	for more := true; more; more = s.Next(',') {
		var zero T
		*dst = append(*dst, zero)
		if !read(&(*dst)[len(*dst)-1]) {
			return false
		}
	}
	return s.Next(']')
}

func (s *chunkScan) chunk(c *chunk) bool {
	return s.fields(chunkFields, func(i int) bool {
		switch i {
		case 0:
			return list(s, &c.Candidates, s.candidate)
		case 1:
			if s.IsNull() {
				return true
			}
			u := new(usage)
			c.UsageMetadata = u
			counts := [...]*int{&u.PromptTokenCount, &u.CachedContentTokenCount, &u.CandidatesTokenCount, &u.ThoughtsTokenCount}
			return s.fields(usageFields, func(i int) bool { return s.count(counts[i]) })
		}
		return false // promptFeedback and error: rare, read by json.Unmarshal
	})
}

func (s *chunkScan) candidate(c *candidate) bool {
	return s.fields(candidateFields, func(i int) bool {
		if i == 1 {
			return s.text(&c.FinishReason)
		}
		if s.IsNull() {
			return true
		}
		c.Content = new(content)
		return s.fields(contentFields, func(int) bool { return list(s, &c.Content.Parts, s.part) })
	})
}

func (s *chunkScan) part(p *part) bool {
	return s.fields(partFields, func(i int) bool {
		switch i {
		case 0:
			return s.IsNull() || s.ReadText(&p.Text)
		case 1:
			return s.flag(&p.Thought)
		case 2:
			return s.text(&p.ThoughtSignature)
		}
		if s.IsNull() {
			return true
		}
		fc := new(functionCall)
		p.FunctionCall = fc
		return s.fields(callFields, func(i int) bool {
			switch i {
			case 0:
				return s.text(&fc.ID)
			case 1:
				return s.text(&fc.Name)
			}
			// json.RawMessage keeps any value, a null too, as it is.
			start := s.I
			if !s.Skip() {
				return false
			}
			if raw := s.B[start:s.I]; string(raw) == "{}" {
				fc.Args = emptyArgs
			} else {
				fc.Args = append(json.RawMessage(nil), raw...)
			}
			return true
		})
	})
}

// text reads a string field; a null leaves it as it is.
func (s *chunkScan) text(dst *string) bool { return s.IsNull() || s.ReadString(dst) }

// flag reads a bool field; a null leaves it as it is.
func (s *chunkScan) flag(dst *bool) bool {
	rest := s.B[s.I:]
	switch {
	case bytes.HasPrefix(rest, []byte("true")):
		*dst = true
		s.I += 4
		return true
	case bytes.HasPrefix(rest, []byte("false")):
		*dst = false
		s.I += 5
		return true
	}
	return s.IsNull()
}

// count reads an int field that holds a small integer; a null leaves it
// as it is.
func (s *chunkScan) count(dst *int) bool {
	if s.IsNull() {
		return true
	}
	var n int64
	if !s.Int(&n) {
		return false
	}
	*dst = int(n)
	return true
}
