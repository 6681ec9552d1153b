package responses

import (
	"encoding/json"

	"github.com/myelin-run/myelin/internal/jsonscan"
)

// decodeEvent fills ev (reset first) from data, the JSON of one stream
// event, exactly as json.Unmarshal(data, ev) would, or fails as it does.
//
// It is a scan (jsonscan.Scanner) of the members event holds — and, in
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
	s := eventScanner{jsonscan.Scanner{B: data}}
	if s.event(ev) && s.AtEnd() {
		return nil
	}
	*ev = event{}
	return json.Unmarshal(data, ev)
}

// eventScanner reads an event's JSON. Each method reports whether what
// it read is what it takes; false sends the event to json.Unmarshal.
type eventScanner struct{ jsonscan.Scanner }

// The keys of each object the scan reads members of, in the order of the
// bits that mark a key as seen (a key seen twice goes to json.Unmarshal,
// which decodes the second value over the first).
var (
	eventKeys      = []string{"type", "output_index", "summary_index", "content_index", "delta", "item", "response", "code", "message", "error"}
	itemKeys       = []string{"type", "call_id", "name", "arguments", "content", "summary", "encrypted_content", "phase"}
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
	eventError    = 9  // eventKeys
	itemArguments = 3  // itemKeys
	responseError = 1  // responseKeys
	noRaw         = -1 // for jsonscan.Scanner.Members
)

func (s *eventScanner) event(ev *event) bool {
	return s.Members(eventKeys, eventError, func(i int) bool {
		switch i {
		case 0:
			return s.ReadName(&ev.Type, names)
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
	return s.Members(itemKeys, itemArguments, func(i int) bool {
		switch i {
		case 0:
			return s.ReadName(&it.Type, names)
		case 1:
			return s.ReadString(&it.CallID)
		case 2:
			return s.ReadString(&it.Name)
		case 3:
			return s.raw(&it.Arguments)
		case 4:
			return s.Array(func() bool {
				it.Content = append(it.Content, outContent{})
				c := &it.Content[len(it.Content)-1]
				return s.Members(contentKeys, noRaw, func(i int) bool {
					switch i {
					case 0:
						return s.ReadName(&c.Type, names)
					case 1:
						return s.ReadText(&c.Text)
					}
					return s.ReadText(&c.Refusal)
				})
			}, func() { it.Content = []outContent{} })
		case 5:
			return s.Array(func() bool {
				it.Summary = append(it.Summary, outSummary{})
				sum := &it.Summary[len(it.Summary)-1]
				return s.Members(summaryKeys, noRaw, func(int) bool { return s.ReadString(&sum.Text) })
			}, func() { it.Summary = []outSummary{} })
		case 7:
			return s.ReadName(&it.Phase, names)
		}
		enc := new(string)
		it.EncryptedContent = enc
		return s.ReadString(enc)
	})
}

func (s *eventScanner) response(r *response) bool {
	return s.Members(responseKeys, responseError, func(i int) bool {
		switch i {
		case 0:
			return s.ReadName(&r.Status, names)
		case 1:
			return s.raw(&r.Error)
		case 2:
			return s.Array(func() bool {
				r.Output = append(r.Output, outItem{})
				return s.item(&r.Output[len(r.Output)-1])
			}, func() { r.Output = []outItem{} })
		case 3:
			r.Usage = new(usage)
			return s.usage(r.Usage)
		}
		return s.Members(incompleteKeys, noRaw, func(int) bool { return s.ReadName(&r.IncompleteDetails.Reason, names) })
	})
}

func (s *eventScanner) usage(u *usage) bool {
	return s.Members(usageKeys, noRaw, func(i int) bool {
		switch i {
		case 0:
			return s.ReadInt(&u.InputTokens)
		case 1:
			return s.ReadInt(&u.OutputTokens)
		}
		d := &u.InputTokensDetails
		return s.Members(detailsKeys, noRaw, func(i int) bool {
			if i == 0 {
				return s.ReadInt(&d.CachedTokens)
			}
			return s.ReadInt(&d.CacheWriteTokens)
		})
	})
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

// names are the values of the members read by ReadName — event, item and
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
	"max_output_tokens", "content_filter", "commentary", "final_answer",
}

// argumentsOf is the string a function_call item's arguments hold (raw,
// as outItem keeps them), exactly as json.Unmarshal into a string reads
// it, and whether it did: a plain string is read by jsonscan.Scanner,
// anything else by json.Unmarshal (FuzzArgumentsOfIsEncodingJSONs).
func argumentsOf(raw json.RawMessage) (string, bool) {
	s := jsonscan.Scanner{B: raw}
	var args string
	if s.ReadString(&args) && s.AtEnd() {
		return args, true
	}
	args = ""
	return args, json.Unmarshal(raw, &args) == nil
}
