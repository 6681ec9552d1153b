package anthropic

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/myelin-run/myelin/internal/jsonscan"
)

// decodeEvent fills ev (reset first) from data, the JSON of one stream
// event, exactly as json.Unmarshal(data, ev) would, or fails as it does.
//
// It is a scan of the few members streamEvent holds that skips the rest
// without building anything: encoding/json checked each event whole,
// then decoded it by reflection, which was the most of what reading a
// stream cost (BenchmarkReadStream). Whatever the scan does not take as
// plainly as encoding/json would — a string with an escape or not valid
// UTF-8, a number that is not a small integer, a key in another case
// (encoding/json matches keys without case), anything malformed — it
// hands to json.Unmarshal: for that string alone, or for the whole
// event. It must never accept an event json.Unmarshal refuses, nor read
// one otherwise (FuzzDecodeEventIsEncodingJSONs).
func decodeEvent(data []byte, ev *streamEvent) error {
	*ev = streamEvent{}
	s := scanner{jsonscan.Scanner{B: data}}
	if s.object(inEvent, ev) && s.AtEnd() {
		return nil
	}
	*ev = streamEvent{}
	return json.Unmarshal(data, ev)
}

// The objects of an event the scan reads members of.
const (
	inEvent         = iota // the event
	inMessage              // message_start's message
	inStartUsage           // its usage
	inContentBlock         // content_block_start's block
	inDelta                // a delta
	inDeltaUsage           // message_delta's usage
	inCacheCreation        // message_start's usage.cache_creation
)

// scanner reads an event's JSON (jsonscan.Scanner). Each method reports
// whether what it read was what it takes; false sends the event to
// json.Unmarshal.
type scanner struct{ jsonscan.Scanner }

// object reads an object, each member by member(in, ...).
func (s *scanner) object(in int, ev *streamEvent) bool {
	return s.Object(func(key []byte) bool { return s.member(in, key, ev) })
}

// member reads the value of key in an object of kind in.
func (s *scanner) member(in int, key []byte, ev *streamEvent) bool {
	if s.IsNull() {
		// the field stays as it is, as in encoding/json, but for a
		// pointer, which null makes nil again
		if !slices.Contains(keysOf[in], string(key)) {
			return s.unknown(in, key)
		}
		if in == inDeltaUsage {
			switch string(key) {
			case "input_tokens":
				ev.Usage.InputTokens = nil
			case "cache_read_input_tokens":
				ev.Usage.CacheReadInputTokens = nil
			case "cache_creation_input_tokens":
				ev.Usage.CacheCreationInputTokens = nil
			}
		}
		return true
	}
	switch in {
	case inEvent:
		switch string(key) {
		case "type":
			return s.name(&ev.Type)
		case "index":
			return s.Int(&ev.Index)
		case "message":
			return s.object(inMessage, ev)
		case "content_block":
			return s.object(inContentBlock, ev)
		case "delta":
			return s.object(inDelta, ev)
		case "usage":
			return s.object(inDeltaUsage, ev)
		}
		return s.other(in, key)
	case inMessage:
		if string(key) == "usage" {
			return s.object(inStartUsage, ev)
		}
		return s.other(in, key)
	case inStartUsage:
		u := &ev.Message.Usage
		switch string(key) {
		case "input_tokens":
			return s.Int(&u.InputTokens)
		case "output_tokens":
			return s.Int(&u.OutputTokens)
		case "cache_read_input_tokens":
			return s.Int(&u.CacheReadInputTokens)
		case "cache_creation_input_tokens":
			return s.Int(&u.CacheCreationInputTokens)
		case "cache_creation":
			return s.object(inCacheCreation, ev)
		}
		return s.other(in, key)
	case inCacheCreation:
		if string(key) == "ephemeral_1h_input_tokens" {
			return s.Int(&ev.Message.Usage.CacheCreation.Ephemeral1hInputTokens)
		}
		return s.other(in, key)
	case inContentBlock:
		cb := &ev.ContentBlock
		switch string(key) {
		case "type":
			return s.name(&cb.Type)
		case "id":
			return s.bytesOf(&cb.ID, &cb.id)
		case "name":
			return s.bytesOf(&cb.Name, &cb.name)
		case "text":
			return s.ReadText(&cb.Text)
		case "thinking":
			return s.ReadText(&cb.Thinking)
		case "signature":
			return s.ReadString(&cb.Signature)
		case "data":
			return s.ReadString(&cb.Data)
		}
		return s.other(in, key)
	case inDelta:
		d := &ev.Delta
		switch string(key) {
		case "type":
			return s.name(&d.Type)
		case "text":
			return s.ReadText(&d.Text)
		case "partial_json":
			return s.bytesOf(&d.PartialJSON, &d.partialJSON)
		case "thinking":
			return s.ReadText(&d.Thinking)
		case "signature":
			return s.ReadString(&d.Signature)
		case "stop_reason":
			return s.name(&d.StopReason)
		}
		return s.other(in, key)
	case inDeltaUsage:
		u := &ev.Usage
		switch string(key) {
		case "input_tokens":
			return s.intPtr(&u.InputTokens)
		case "output_tokens":
			return s.Int(&u.OutputTokens)
		case "cache_read_input_tokens":
			return s.intPtr(&u.CacheReadInputTokens)
		case "cache_creation_input_tokens":
			return s.intPtr(&u.CacheCreationInputTokens)
		}
		return s.other(in, key)
	}
	return false
}

// keysOf are the keys of the members each kind of object has fields for.
var keysOf = [...][]string{
	inEvent:         {"type", "index", "message", "content_block", "delta", "usage"},
	inMessage:       {"usage"},
	inStartUsage:    {"input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "cache_creation"},
	inContentBlock:  {"type", "id", "name", "text", "thinking", "signature", "data"},
	inDelta:         {"type", "text", "partial_json", "thinking", "signature", "stop_reason"},
	inDeltaUsage:    {"input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"},
	inCacheCreation: {"ephemeral_1h_input_tokens"},
}

// unknown reports whether key, which names no field of an object of kind
// in, is one the scan may pass over: not when encoding/json would take
// it for one of the fields' keys (it matches keys without case).
func (s *scanner) unknown(in int, key []byte) bool {
	for _, k := range keysOf[in] {
		if bytes.EqualFold(key, []byte(k)) {
			return false
		}
	}
	return true
}

// other skips the value of a key no field of an object of kind in names
// (unknown).
func (s *scanner) other(in int, key []byte) bool {
	return s.unknown(in, key) && s.Skip()
}

// names are the values of the event's "type" members and of stop_reason,
// kept as one string each so that an event does not allocate them.
var names = []string{
	"message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop",
	"text", "tool_use", "thinking", "redacted_thinking",
	"text_delta", "input_json_delta", "thinking_delta", "signature_delta",
	"end_turn", "max_tokens", "stop_sequence", "pause_turn", "refusal",
}

// name reads a string that is most often one of names.
func (s *scanner) name(dst *string) bool {
	start := s.I
	raw, ok := s.PlainString()
	if !ok {
		s.I = start
		return s.ReadString(dst)
	}
	for _, n := range names {
		if string(raw) == n {
			*dst = n
			return true
		}
	}
	*dst = string(raw)
	return true
}

// bytesOf reads a string into raw, as its bytes in the event (dst made
// empty), when it needs no decoding; else into dst, as ReadString does
// (raw made nil). Of a key given twice, the last counts, as in
// encoding/json. An id, a name and a piece of a call's input so cost no
// string each (streamEvent).
func (s *scanner) bytesOf(dst *string, raw *[]byte) bool {
	start := s.I
	b, ok := s.PlainString()
	if !ok {
		s.I = start
		*raw = nil
		return s.ReadString(dst)
	}
	*dst, *raw = "", b
	return true
}

func (s *scanner) intPtr(dst **int64) bool {
	var n int64
	if !s.Int(&n) {
		return false
	}
	*dst = &n
	return true
}
