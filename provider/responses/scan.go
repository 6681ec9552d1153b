package responses

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/myelin-run/myelin/provider"
)

// decodeEvent fills ev (reset first) from data, the JSON of one stream
// event, exactly as json.Unmarshal(data, ev) would, or fails as it does.
//
// It is a scan (provider.Scanner) of the members event holds — and, in
// its item and its response, of those outItem and response hold — that
// skips the rest without building anything: encoding/json checked each
// event whole, then decoded it by reflection, which was most of what
// reading a light round's stream cost (BenchmarkRead). Whatever the scan
// does not take as plainly as encoding/json would — a string with an
// escape or not valid UTF-8, a number that is not a small integer, a key
// in another case (encoding/json matches keys without case), a key given
// twice, a null where it is not a no-op, anything malformed — it hands to
// json.Unmarshal: for that string alone, or for the whole event. It must
// never accept an event json.Unmarshal refuses, nor read one otherwise
// (FuzzDecodeEventIsEncodingJSONs).
func decodeEvent(data []byte, ev *event) error {
	*ev = event{}
	s := eventScanner{provider.Scanner{B: data}}
	if s.event(ev) && s.AtEnd() {
		return nil
	}
	*ev = event{}
	return json.Unmarshal(data, ev)
}

// eventScanner reads an event's JSON. Each method reports whether what
// it read is what it takes; false sends the event to json.Unmarshal.
type eventScanner struct{ provider.Scanner }

// The keys of each object the scan reads members of, in the order of the
// bits that mark a key as seen (a key seen twice goes to json.Unmarshal,
// which decodes the second value over the first).
var (
	eventKeys      = []string{"type", "output_index", "summary_index", "content_index", "delta", "item", "response", "code", "message", "error"}
	itemKeys       = []string{"type", "call_id", "name", "arguments", "content", "summary", "encrypted_content"}
	contentKeys    = []string{"type", "text", "refusal"}
	summaryKeys    = []string{"text"}
	responseKeys   = []string{"status", "error", "output", "usage", "incomplete_details"}
	usageKeys      = []string{"input_tokens", "output_tokens", "input_tokens_details"}
	detailsKeys    = []string{"cached_tokens", "cache_write_tokens"}
	incompleteKeys = []string{"reason"}
)

// The index, in its keys, of each member that is a json.RawMessage: the
// only fields for which null is not a no-op (a RawMessage keeps it).
const (
	eventError    = 9 // eventKeys
	itemArguments = 3 // itemKeys
	responseError = 1 // responseKeys
	noRaw         = -1
)

// object reads an object whose members keys name, each known one by
// known(i) with the scan at its value. A null for one is a no-op, as it
// is in encoding/json for every field (a pointer or a slice stays nil,
// the scan having started from the zero value), but for the one at raw,
// a json.RawMessage, whose null passes to known as any other value.
// Other keys' values are skipped, but for one encoding/json would match
// to a known key without case.
func (s *eventScanner) object(keys []string, raw int, known func(i int) bool) bool {
	var seen uint
	return s.Object(func(key []byte) bool {
		i := indexOf(keys, key)
		if i < 0 {
			if mayFold(key) {
				for _, k := range keys {
					if bytes.EqualFold(key, []byte(k)) {
						return false
					}
				}
			}
			return s.Skip()
		}
		if seen&(1<<i) != 0 {
			return false
		}
		seen |= 1 << i
		if i != raw && s.IsNull() {
			return true
		}
		return known(i)
	})
}

// mayFold reports whether key could match a key of the scan's (each of
// lower-case ASCII letters and '_') without case and not exactly: only
// one with an upper-case ASCII letter or a byte beyond ASCII can (the
// Kelvin sign folds to k, the long s to s). Most unknown keys are plain,
// and bytes.EqualFold was most of what passing over them cost.
func mayFold(key []byte) bool {
	for _, c := range key {
		if c >= utf8.RuneSelf || 'A' <= c && c <= 'Z' {
			return true
		}
	}
	return false
}

func indexOf(keys []string, key []byte) int {
	for i, k := range keys {
		if string(key) == k {
			return i
		}
	}
	return -1
}

func (s *eventScanner) event(ev *event) bool {
	return s.object(eventKeys, eventError, func(i int) bool {
		switch i {
		case 0:
			return s.name(&ev.Type)
		case 1:
			return s.Int(&ev.OutputIndex)
		case 2:
			return s.Int(&ev.SummaryIndex)
		case 3:
			return s.Int(&ev.ContentIndex)
		case 4:
			return s.ReadText(&ev.Delta)
		case 5:
			ev.Item = new(outItem)
			return s.item(ev.Item)
		case 6:
			ev.Response = new(response)
			return s.response(ev.Response)
		case 7:
			return s.ReadString(&ev.Code)
		case 8:
			return s.ReadString(&ev.Message)
		}
		return s.raw(&ev.Error)
	})
}

func (s *eventScanner) item(it *outItem) bool {
	return s.object(itemKeys, itemArguments, func(i int) bool {
		switch i {
		case 0:
			return s.name(&it.Type)
		case 1:
			return s.ReadString(&it.CallID)
		case 2:
			return s.ReadString(&it.Name)
		case 3:
			return s.raw(&it.Arguments)
		case 4:
			return s.array(func() bool {
				it.Content = append(it.Content, outContent{})
				c := &it.Content[len(it.Content)-1]
				return s.object(contentKeys, noRaw, func(i int) bool {
					switch i {
					case 0:
						return s.name(&c.Type)
					case 1:
						return s.ReadText(&c.Text)
					}
					return s.ReadText(&c.Refusal)
				})
			}, func() { it.Content = []outContent{} })
		case 5:
			return s.array(func() bool {
				it.Summary = append(it.Summary, outSummary{})
				sum := &it.Summary[len(it.Summary)-1]
				return s.object(summaryKeys, noRaw, func(int) bool { return s.ReadString(&sum.Text) })
			}, func() { it.Summary = []outSummary{} })
		}
		enc := new(string)
		it.EncryptedContent = enc
		return s.ReadString(enc)
	})
}

func (s *eventScanner) response(r *response) bool {
	return s.object(responseKeys, responseError, func(i int) bool {
		switch i {
		case 0:
			return s.name(&r.Status)
		case 1:
			return s.raw(&r.Error)
		case 2:
			return s.array(func() bool {
				r.Output = append(r.Output, outItem{})
				return s.item(&r.Output[len(r.Output)-1])
			}, func() { r.Output = []outItem{} })
		case 3:
			r.Usage = new(usage)
			return s.usage(r.Usage)
		}
		return s.object(incompleteKeys, noRaw, func(int) bool { return s.name(&r.IncompleteDetails.Reason) })
	})
}

func (s *eventScanner) usage(u *usage) bool {
	return s.object(usageKeys, noRaw, func(i int) bool {
		switch i {
		case 0:
			return s.int(&u.InputTokens)
		case 1:
			return s.int(&u.OutputTokens)
		}
		d := &u.InputTokensDetails
		return s.object(detailsKeys, noRaw, func(i int) bool {
			if i == 0 {
				return s.int(&d.CachedTokens)
			}
			return s.int(&d.CacheWriteTokens)
		})
	})
}

// array reads an array, each element by elem; an empty one is made by
// empty, as encoding/json makes an empty slice, not nil. A null element
// goes to json.Unmarshal (elem refuses it).
func (s *eventScanner) array(elem func() bool, empty func()) bool {
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

func (s *eventScanner) int(dst *int) bool {
	var n int64
	if !s.Int(&n) {
		return false
	}
	*dst = int(n)
	return true
}

// raw reads any value into dst as a json.RawMessage takes it: its bytes,
// copied (the stream reader reuses its buffer).
func (s *eventScanner) raw(dst *json.RawMessage) bool {
	start := s.I
	if !s.Skip() {
		return false
	}
	*dst = append(json.RawMessage(nil), s.B[start:s.I]...)
	return true
}

// names are the values of the members name reads — event, item and
// content types, statuses, reasons — kept as one string each so that an
// event does not allocate them.
var names = []string{
	"response.output_item.added", "response.output_item.done",
	"response.output_text.delta", "response.refusal.delta",
	"response.reasoning_summary_text.delta", "response.reasoning_text.delta",
	"response.function_call_arguments.delta",
	"response.completed", "response.incomplete", "response.failed", "error",
	"function_call", "message", "reasoning", "output_text", "refusal",
	"completed", "incomplete", "in_progress", "failed", "cancelled",
	"max_output_tokens", "content_filter",
}

// name reads a string into dst as provider.Scanner.ReadString does, one
// of names as that string, so that it is not allocated.
func (s *eventScanner) name(dst *string) bool {
	start := s.I
	if raw, ok := s.PlainString(); ok {
		for _, n := range names {
			if string(raw) == n {
				*dst = n
				return true
			}
		}
		*dst = string(raw)
		return true
	}
	s.I = start
	return s.ReadString(dst)
}

// argumentsOf is the string a function_call item's arguments hold (raw,
// as outItem keeps them), exactly as json.Unmarshal into a string reads
// it, and whether it did: a plain string is read by provider.Scanner,
// anything else by json.Unmarshal (FuzzArgumentsOfIsEncodingJSONs).
func argumentsOf(raw json.RawMessage) (string, bool) {
	s := provider.Scanner{B: raw}
	var args string
	if s.ReadString(&args) && s.AtEnd() {
		return args, true
	}
	args = ""
	return args, json.Unmarshal(raw, &args) == nil
}
