package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/myelin-run/myelin/permission"
	"github.com/myelin-run/myelin/result"
)

// samePacked packs msgs, alone and after other bytes, and checks that
// Unpack gives them back DeepEqual, each message's parts with a capacity
// of their length, and that the packed bytes cut short or with a byte
// after them are refused. It returns the packed bytes.
func samePacked(t *testing.T, msgs []Message) []byte {
	t.Helper()
	packed := AppendPacked(nil, msgs)
	got, err := Unpack(packed)
	if err != nil {
		t.Fatalf("unpacking %d messages packed: %v", len(msgs), err)
	}
	if !reflect.DeepEqual(got, msgs) {
		t.Fatalf("%d messages packed and unpacked: %s", len(msgs), firstDiff(reflect.ValueOf(got), reflect.ValueOf(msgs), "msgs"))
	}
	for i, m := range got {
		if cap(m.Parts) != len(m.Parts) {
			t.Fatalf("message %d: its parts have room after them (%d of %d): an append would write into the next message's", i, len(m.Parts), cap(m.Parts))
		}
	}
	// in chunks of a few messages, each chunk a unit of work, on several
	// goroutines: the same messages
	for _, chunk := range []int{1, 3} {
		small := appendPacked(nil, msgs, chunk)
		for _, workers := range []int{1, 2, 4} {
			got, err := unpack(small, workers, 0)
			if err != nil {
				t.Fatalf("unpacking %d messages packed in chunks of %d on %d goroutines: %v", len(msgs), chunk, workers, err)
			}
			if !reflect.DeepEqual(got, msgs) {
				t.Fatalf("%d messages packed in chunks of %d and unpacked on %d goroutines: %s", len(msgs), chunk, workers, firstDiff(reflect.ValueOf(got), reflect.ValueOf(msgs), "msgs"))
			}
			for i, m := range got {
				if cap(m.Parts) != len(m.Parts) {
					t.Fatalf("message %d unpacked in chunks of %d on %d goroutines: its parts have room after them", i, chunk, workers)
				}
			}
		}
		if len(small) < 4096 {
			for n := 0; n < len(small); n++ {
				if back, err := unpack(small[:n:n], 2, 0); err == nil {
					t.Fatalf("%d of the %d bytes packed in chunks of %d unpacked without an error, to %#v", n, len(small), chunk, back)
				}
			}
		}
	}
	// after the caller's own bytes (the agent's facts), read from where
	// they end
	after := AppendPacked([]byte("facts"), msgs)
	if !bytes.Equal(after[5:], packed) {
		t.Fatalf("packed after other bytes: %q; alone: %q", after[5:], packed)
	}
	// every proper prefix is refused, and a byte more
	step := 1
	if len(packed) > 4096 {
		step = len(packed)/1000 + 1
	}
	for n := 0; n < len(packed); n += step {
		if back, err := Unpack(packed[:n:n]); err == nil {
			t.Fatalf("%d of the %d packed bytes unpacked without an error, to %#v", n, len(packed), back)
		}
	}
	if _, err := Unpack(append(packed[:len(packed):len(packed)], 0)); err == nil {
		t.Fatalf("the packed bytes with a byte after them unpacked without an error")
	}
	return packed
}

// firstDiff says where got and want first differ, as DeepEqual sees them.
func firstDiff(got, want reflect.Value, path string) string {
	if got.Type() == timeType {
		if !reflect.DeepEqual(got.Interface(), want.Interface()) {
			g, w := got.Interface().(time.Time), want.Interface().(time.Time)
			return fmt.Sprintf("%s is %v in %p, want %v in %p", path, g, g.Location(), w, w.Location())
		}
		return ""
	}
	switch got.Kind() {
	case reflect.Pointer, reflect.Slice:
		if got.IsNil() != want.IsNil() {
			return fmt.Sprintf("%s is %#v, want %#v", path, got.Interface(), want.Interface())
		}
		if got.Kind() == reflect.Pointer {
			if got.IsNil() {
				return ""
			}
			return firstDiff(got.Elem(), want.Elem(), path)
		}
		if got.Len() != want.Len() {
			return fmt.Sprintf("%s has %d elements, want %d", path, got.Len(), want.Len())
		}
		for i := range got.Len() {
			if d := firstDiff(got.Index(i), want.Index(i), fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
		return ""
	case reflect.Struct:
		for i := range got.NumField() {
			if d := firstDiff(got.Field(i), want.Field(i), path+"."+got.Type().Field(i).Name); d != "" {
				return d
			}
		}
		return ""
	}
	if !reflect.DeepEqual(got.Interface(), want.Interface()) {
		return fmt.Sprintf("%s is %#v, want %#v", path, got.Interface(), want.Interface())
	}
	return ""
}

// decoded is m as a store reads it back: EncodeMessage, then DecodeMessage.
func decoded(t testing.TB, m Message) Message {
	t.Helper()
	raw, err := EncodeMessage(m)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeMessage(raw)
	if err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return back
}

func TestPackedMessagesUnpackAsTheyWere(t *testing.T) {
	at := time.Date(2026, 12, 6, 19, 30, 1, 123456789, time.UTC)
	big := strings.Repeat("line of a long file, with é and \t and \"quotes\"\n", 200000) // ~10 MB
	png := []byte{0x89, 'P', 'N', 'G', 0, 1, 2}
	for name, msgs := range map[string][]Message{
		"a nil list":                        nil,
		"an empty list":                     {},
		"a message of nothing":              {{}},
		"no parts, nil":                     {{Role: User, Time: at}},
		"no parts, empty":                   {{Role: User, Parts: []Part{}, Time: at}},
		"an empty part":                     {{Role: User, Parts: []Part{{}}, Time: at}},
		"nil and empty Input and Raw":       {{Role: Assistant, Parts: []Part{{Type: ToolCallPart, Input: nil}, {Type: ToolCallPart, Input: json.RawMessage{}}, {Type: ReasoningPart, Raw: nil}, {Type: ReasoningPart, Raw: json.RawMessage{}}, {Type: ReasoningPart, Raw: json.RawMessage(`"x"`), Input: json.RawMessage(`null`)}}}},
		"a usage of zeros and of negatives": {{Role: Assistant, Usage: &Usage{}}, {Role: Assistant, Usage: &Usage{Input: -1, Output: -1 << 30, CacheRead: 1<<31 - 1, CacheWrite: 7, CacheWrite1h: 3}}},
		"huge text":                         {{Role: User, Parts: []Part{{Type: ToolResultPart, CallID: "c", Text: big}}, Time: at}},
		"images":                            {{Role: User, Parts: []Part{{Type: ToolResultPart, Images: []result.Image{}}, {Type: ToolResultPart, Images: []result.Image{{}, {MIMEType: "image/png", Data: png}, {Data: []byte{}}}}}}},
		"the known roles and types, and others": {
			{Role: User, Parts: []Part{{Type: TextPart, Text: "a"}}}, {Role: Assistant, Parts: []Part{{Type: ReasoningPart}, {Type: ToolCallPart}}},
			{Role: Context, Edit: &Edit{Why: "w"}}, {Role: "system", Parts: []Part{{Type: "image"}, {Type: ToolResultPart}}},
		},
		"strings not UTF-8, kept as given": {{Role: "\xff", Parts: []Part{{Type: "\xfe", Text: "a\xffb", CallID: "\x80", Input: json.RawMessage("{\"a\":\"\xff\"}")}}}},
		"times": {
			{Time: time.Time{}}, {Time: at}, {Time: parsed(t, "2026-12-06T19:30:01.123456789+05:30")}, {Time: parsed(t, "2026-12-06T19:30:01-08:00")},
			{Time: at.In(time.Local)}, {Time: parsed(t, "2026-07-01T19:30:01+02:00")}, {Time: parsed(t, "2026-12-06T19:30:01+00:00")}, {Time: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)},
			{Time: time.Date(0, 1, 1, 0, 0, 0, 0, time.FixedZone("", -(23*3600+59*60)))},
		},
		"edits and settings": {
			{Role: Context, Edit: &Edit{}},
			{Role: Context, Edit: &Edit{Cleared: []Cleared{}, Summary: &Summary{}, Refusal: &Refusal{}}},
			{Role: Context, Edit: &Edit{Cleared: []Cleared{{Msg: 3, CallID: "c", Input: true, Text: "t", Path: "p", Chars: -2, Images: 1}, {}}, Summary: &Summary{Through: 9, Text: "s", Usage: &Usage{Input: 1}}, Why: "w", Refusal: &Refusal{Stop: "refusal", Text: "no", Usage: &Usage{}}, Before: 100, After: -5}},
			{Role: Assistant, Settings: &Settings{}}, {Role: Assistant, Settings: &Settings{Model: "m", System: "s", Tools: "t", Cache: "c", CacheTTL: "1h"}},
		},
		"permissions and files": {{Role: User, Parts: []Part{
			{Type: ToolResultPart, Permission: &permission.Record{}, Files: []FileChange{}},
			{Type: ToolResultPart, Permission: &permission.Record{Decision: "deny", By: "person", Rule: "r", Answer: "deny", Reason: "why", At: parsed(t, "2026-12-06T19:30:01+01:00")},
				Files: []FileChange{{Path: "a.txt", Before: "x", After: "y"}, {Path: "b", Created: true}, {}}},
		}}},
	} {
		t.Run(name, func(t *testing.T) {
			samePacked(t, msgs)
			if msgs == nil {
				return
			}
			stored := make([]Message, len(msgs))
			for i, m := range msgs {
				stored[i] = decoded(t, m)
			}
			samePacked(t, stored)
		})
	}
}

// parsed is the time a store reads from its RFC 3339 text: in UTC, or in
// the Location time.Parse gives its offset in this process.
func parsed(t *testing.T, v string) time.Time {
	at, err := time.Parse(time.RFC3339, v)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

// A message's time that is not as a store reads it (a clock reading, a
// named zone) comes back as the store reads it: its monotonic reading
// dropped, in UTC or in the Location its offset reads as; but a time at
// offset 0 not in UTC comes back as a stored "+00:00" reads.
func TestPackedTimesComeBackAsTheStoreReadsThem(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		paris = time.FixedZone("CET", 3600) // no zone database here
	}
	now := time.Now()
	for _, at := range []time.Time{now, now.UTC(), now.In(paris), now.In(time.FixedZone("IST", 5*3600+1800)), now.In(time.FixedZone("", -3600))} {
		got, err := Unpack(AppendPacked(nil, []Message{{Time: at}}))
		if err != nil {
			t.Fatal(err)
		}
		want := decoded(t, Message{Time: at}).Time
		if _, off := at.Zone(); off == 0 && at.Location() != time.UTC {
			// the one exception: the store writes it with "Z" (read as
			// UTC), the codec keeps that it was not UTC, as a stored
			// "+00:00" (read as Local, or a fixed zone) must be kept
			want = parsed(t, at.Format("2006-01-02T15:04:05.999999999+00:00"))
		}
		if !reflect.DeepEqual(got[0].Time, want) {
			t.Errorf("%v packed came back as %v (%p); the store reads it as %v (%p)", at, got[0].Time, got[0].Time.Location(), want, want.Location())
		}
	}
}

// What DecodeMessage (or a Decoder) gives for stored bytes of every shape
// it takes — through its fast path and through encoding/json — is what
// Unpack gives back.
func TestPackedMessagesUnpackAsDecodeMessageReadThem(t *testing.T) {
	var msgs []Message
	for _, raw := range packSeeds(t) {
		if m, err := DecodeMessage(raw); err == nil {
			samePacked(t, []Message{m})
			msgs = append(msgs, m)
		}
	}
	if len(msgs) < 20 {
		t.Fatalf("only %d of the seeds decode", len(msgs))
	}
	samePacked(t, msgs)
	// as a store reads many: by one Decoder
	var d Decoder
	var read []Message
	for _, raw := range packSeeds(t) {
		if m, err := d.Message(raw, 0); err == nil {
			read = append(read, m)
		}
	}
	samePacked(t, read)
}

// The test below packs a message whose every field is set, found by
// reflection, so that a field added to Message, Part or anything they hold
// is set too: a codec that drops it fails here.

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
)

// fill sets every exported field of v, recursively, to a value that is not
// zero and survives the store's JSON: strings and numbers of their own,
// true, two elements of each slice, a value behind each pointer.
func fill(t *testing.T, v reflect.Value, path string, n *int) {
	t.Helper()
	*n++
	switch v.Type() {
	case timeType:
		at := time.Date(2026, 12, 6, 19, *n%60, *n%60, *n*1000+7, time.FixedZone("", (5*60+*n)*60))
		v.Set(reflect.ValueOf(at))
		return
	case rawType:
		v.SetBytes(fmt.Appendf(nil, `{"%s":%d}`, path, *n))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("%s-%d é", path, *n))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Uint, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(*n))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(*n) + 0.5)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(t, v.Elem(), path, n)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes(fmt.Appendf(nil, "\x89bytes %s %d", path, *n))
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fill(t, v.Index(i), fmt.Sprintf("%s[%d]", path, i), n)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				t.Fatalf("%s.%s is not exported: the test does not know how to set it", path, f.Name)
			}
			fill(t, v.Field(i), path+"."+f.Name, n)
		}
	default:
		t.Fatalf("%s is a %s: the test does not know how to set it; teach it", path, v.Type())
	}
}

// unset is the path of a field of v that is zero (recursively), "" when
// none is.
func unset(v reflect.Value, path string) string {
	if v.IsZero() {
		return path
	}
	if v.Type() == timeType {
		return ""
	}
	switch v.Kind() {
	case reflect.Pointer:
		return unset(v.Elem(), path)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return ""
		}
		for i := range v.Len() {
			if p := unset(v.Index(i), fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if p := unset(v.Field(i), path+"."+v.Type().Field(i).Name); p != "" {
				return p
			}
		}
	}
	return ""
}

// A message whose every field is set — every field of its parts, usage,
// edit, settings, and what they hold, found by reflection — is stored and
// read back, then packed and unpacked to the message read back.
func TestPackedMessageKeepsEveryFieldOfAStoredOne(t *testing.T) {
	var m Message
	n := 0
	fill(t, reflect.ValueOf(&m).Elem(), "Message", &n)
	back := decoded(t, m)
	if p := unset(reflect.ValueOf(back), "Message"); p != "" {
		t.Fatalf("%s was set and is zero once stored and read back: a field the store does not keep? %#v", p, back)
	}
	for _, role := range []Role{User, Assistant, Context} {
		back.Role = role
		for _, typ := range []PartType{TextPart, ToolCallPart, ToolResultPart, ReasoningPart, m.Parts[0].Type} {
			back.Parts[0].Type = typ
			samePacked(t, []Message{back, back})
		}
	}
	samePacked(t, []Message{m})
	if n < 100 {
		t.Fatalf("only %d values set: the walk missed fields", n)
	}
}

// A conversation packed in a process whose Local zone is one, and unpacked
// in one whose Local is another (a restart under another TZ), unpacks to
// what DecodeMessage reads of its stored rows in the second: each time in
// Local where Local has its offset, in a fixed zone elsewhere, in UTC when
// stored so.
func TestUnpackGivesEachTimeTheZoneDecodeMessageGivesInThisProcess(t *testing.T) {
	was := time.Local
	t.Cleanup(func() { time.Local = was })
	var raws [][]byte
	for _, at := range []string{"2026-12-06T19:30:01+05:30", "2026-12-06T19:30:01Z", "2026-12-06T19:30:01+00:00", "2026-12-06T19:30:01.5-08:00", "2026-07-01T10:00:00+01:00", "2026-12-01T10:00:00+01:00"} {
		raws = append(raws, []byte(`{"role":"user","parts":[],"time":"`+at+`"}`))
	}
	read := func() []Message {
		var msgs []Message
		for _, raw := range raws {
			m, err := DecodeMessage(raw)
			if err != nil {
				t.Fatal(err)
			}
			msgs = append(msgs, m)
		}
		return msgs
	}
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		paris = time.FixedZone("CET", 3600) // no zone database here
	}
	// a process's Local is never time.UTC itself (under TZ="" it is a
	// zone of offset 0 named UTC), which would read "+00:00" as "Z"
	zones := []*time.Location{time.FixedZone("IST", 5*3600+1800), time.FixedZone("UTC", 0), time.FixedZone("PST", -8*3600), paris}
	for _, from := range zones {
		for _, to := range zones {
			time.Local = from
			packed := samePacked(t, read())
			time.Local = to
			got, err := Unpack(packed)
			if err != nil {
				t.Fatal(err)
			}
			if want := read(); !reflect.DeepEqual(got, want) {
				t.Fatalf("packed under %s, unpacked under %s:\n got %v\nwant %v", from, to, got, want)
			}
		}
	}
}

// Unpack's messages are data's bytes: their strings, Input, Raw and image
// data point into it, and a conversation is a few allocations, not one
// per message or string.
func TestUnpackCopiesNothingAndAllocatesLittle(t *testing.T) {
	msgs := benchConversation(t, 1000)
	msgs[1].Parts[0].Raw = json.RawMessage(`"final"`)
	msgs[2].Parts[0].Images = []result.Image{{MIMEType: "image/png", Data: []byte("png")}}
	packed := AppendPacked(nil, msgs)
	got, err := Unpack(packed)
	if err != nil {
		t.Fatal(err)
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(packed)))
	for what, v := range map[string][]byte{
		"text":       unsafe.Slice(unsafe.StringData(got[0].Parts[0].Text), len(got[0].Parts[0].Text)),
		"call id":    unsafe.Slice(unsafe.StringData(got[0].Parts[1].CallID), len(got[0].Parts[1].CallID)),
		"input":      got[0].Parts[1].Input,
		"raw":        got[1].Parts[0].Raw,
		"image data": got[2].Parts[0].Images[0].Data,
	} {
		if p := uintptr(unsafe.Pointer(unsafe.SliceData(v))); len(v) == 0 || p < start || p+uintptr(len(v)) > start+uintptr(len(packed)) {
			t.Errorf("the %s unpacked (%q) is a copy, not the packed bytes", what, v)
		}
	}
	if !reflect.DeepEqual(got, msgs) {
		t.Fatal("unpacked messages differ from the packed ones")
	}
	msgs[2].Parts[0].Images = nil
	packed = AppendPacked(nil, msgs)
	// the messages, their parts, their usages
	if allocs := testing.AllocsPerRun(5, func() {
		if _, err := Unpack(packed); err != nil {
			t.Fatal(err)
		}
	}); allocs > 3 {
		t.Fatalf("unpacking %d messages made %.0f allocations; want 3: messages, parts, usages", len(msgs), allocs)
	}
}

// Bytes of another version are refused with ErrPackVersion, and bytes
// that are not a packing with an error saying where, never a panic.
func TestUnpackRefusesOtherVersionsAndDamage(t *testing.T) {
	packed := AppendPacked(nil, benchConversation(t, 10))
	other := append([]byte{packVersion + 1}, packed[1:]...)
	if _, err := Unpack(other); !errors.Is(err, ErrPackVersion) {
		t.Fatalf("bytes of version %d unpacked with error %v; want one wrapping ErrPackVersion", other[0], err)
	}
	// each after the version: messages+1, parts, usages, messages a chunk
	for name, c := range map[string]struct {
		data []byte
		want string
	}{
		"nothing":                     {nil, "no bytes"},
		"a version alone":             {[]byte{packVersion}, "cut short"},
		"a nil list and more":         {[]byte{packVersion, 0, 0, 0, 1, 0}, "a nil list of messages with something in it"},
		"more messages than bytes":    {[]byte{packVersion, 100, 0, 0, 1, 0, 0, 0}, "more messages than bytes"},
		"more usages than messages":   {[]byte{packVersion, 2, 0, 2, 1, 0, 2, 0, 0}, "more usages than messages"},
		"chunks of no messages":       {[]byte{packVersion, 2, 0, 0, 0, 0, 2, 0, 0}, "chunks of no messages"},
		"an index past the bytes":     {[]byte{packVersion, 3, 0, 0, 1, 0, 2, 0, 0, 0, 2, 0, 0}, "an index longer than the bytes left"},
		"unknown message flags":       {[]byte{packVersion, 2, 0, 0, 1, 0x80, 2, 0, 0}, "message flags 0x80"},
		"unknown role":                {[]byte{packVersion, 2, 0, 0, 1, 0, 99, 0, 0}, "role 99"},
		"nanoseconds past a second":   {[]byte{packVersion, 2, 0, 0, 1, 0, 2, 0, 0x80, 0xa8, 0xd6, 0xb9, 0x07}, "nanoseconds past a second"},
		"parts past the counted":      {[]byte{packVersion, 2, 1, 0, 1, msgParts, 2, 0, 0, 2, 0, 0, kindText, 0, 0, kindText}, "more parts than counted"},
		"parts fewer than counted":    {[]byte{packVersion, 2, 2, 0, 1, msgParts, 2, 0, 0, 1, 0, 0, kindText, 0, 0, 0}, "1 parts fewer than counted"},
		"usages fewer than counted":   {[]byte{packVersion, 2, 0, 1, 1, 0, 2, 0, 0}, "1 usages fewer than counted"},
		"unknown part flags":          {[]byte{packVersion, 2, 1, 0, 1, msgParts, 2, 0, 0, 1, 0, 0x80, kindText}, "part flags 0x8000"},
		"a string past the end":       {[]byte{packVersion, 2, 1, 0, 1, msgParts, 2, 0, 0, 1, partText, 0, kindText, 9, 'a'}, "a string longer than the bytes left"},
		"a flag neither 0 nor 1":      {[]byte{packVersion, 2, 0, 0, 1, msgEdit, 2, 0, 0, 0, 7}, "a flag neither 0 nor 1"},
		"a varint of eleven bytes":    {[]byte{packVersion, 2, 0, 0, 1, 0, 2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0}, "a number cut short or too long"},
		"a count past the bytes left": {[]byte{packVersion, 2, 1, 0, 1, msgParts, 2, 0, 0, 1, partImages, 0, kindToolResult, 0xff, 0xff, 0x03}, "a count larger than the bytes left"},
		"bytes after the messages":    {[]byte{packVersion, 2, 0, 0, 1, 0, 2, 0, 0, 0}, "bytes after the last message"},
	} {
		for _, workers := range []int{1, 3} {
			msgs, err := unpack(c.data, workers, 0)
			if err == nil {
				t.Errorf("%s: %v unpacked without an error, to %#v", name, c.data, msgs)
				continue
			}
			if errors.Is(err, ErrPackVersion) && len(c.data) > 0 {
				t.Errorf("%s: %v", name, err)
			}
			if !strings.Contains(err.Error(), "packed messages") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: the error %q does not say what it was unpacking and %q", name, err, c.want)
			}
		}
	}
}

// packSeeds are stored messages' bytes of every shape DecodeMessage reads:
// FuzzDecodeMessage's corpus and seeds, the store's bytes of messages of
// every kind, and bytes only encoding/json reads.
func packSeeds(t testing.TB) [][]byte {
	seeds := [][]byte{
		[]byte(`{"role":"assistant","parts":[{"type":"text","text":"hi"}],"usage":{"input":1,"output":2,"cache_read":3,"cache_write":4},"time":"2026-12-02T16:05:04.123456789Z"}`),
		[]byte(`{"role":"user","parts":[],"time":"2026-12-02T16:05:04Z"}`),
		[]byte(`{"role":"assistant","parts":[{"type":"text","text":"hi"}],"usage":{"input":1,"output":2,"cache_read":3,"cache_write":4,"cache_write_1h":4},"time":"2026-12-02T16:05:04Z"}`),
		[]byte(`{"role":"assistant","parts":[{"type":"reasoning","wire":"anthropic","text":"t","raw":{"type":"thinking","thinking":"t","signature":"s"}},{"type":"tool_call","call_id":"c","name":"n","input":{},"signature":"g"}],"time":"2026-12-02T16:05:04Z"}`),
		[]byte(`{"role":"assistant","parts":[{"type":"text","text":"Hel"}],"time":"2026-12-02T16:05:04Z","cut":true}`),
		// encoding/json's: nulls, merges, escapes, zones, invalid UTF-8
		[]byte(`{}`), []byte(`{"parts":null}`), []byte(`{"usage":{"input":-1}}`), []byte(`{"usage":null}`),
		[]byte(`{"parts":[{"input":null,"raw":null,"images":null,"files":null,"permission":null}]}`),
		[]byte(`{"parts":[{"images":[{"mime_type":"a"}],"images":[{"data":""}]}]}`),
		[]byte(`{"parts":[{"images":[{"data":null}]},{"images":[]}]}`),
		[]byte(`{"role":"us\u0065r","parts":[{"type":"t\u0065xt","text":"\ud800 \xff \u00e9"}],"time":"2026-12-02T16:05:04+05:30"}`),
		[]byte(`{"time":"2026-12-02T16:05:04.000000001-00:00"}`), []byte(`{"time":"0000-01-01T00:00:00+23:59"}`),
		[]byte(`{"role":"context","edit":{"cleared":[]},"time":"2026-12-02T16:05:04+01:00"}`),
		[]byte(`{"role":"context","edit":{"cleared":[{"msg":1,"call_id":"c","text":"t"}],"summary":{"through":3,"text":"s","usage":{"input":-2}},"refusal":{"stop":"x"},"before":-1}}`),
		[]byte(`{"role":"assistant","settings":{"model":"m","system":"s","tools":"t","cache_ttl":"1h"},"usage":{}}`),
		[]byte(`{"parts":[{"type":"tool_result","permission":{"decision":"deny","at":"2026-12-02T16:05:04-07:00"},"files":[]}]}`),
		[]byte(`{"parts":[{"type":"tool_result","files":[{"path":"a","created":true},{"path":"b","before":"x","after":"y"}]}]}`),
		[]byte(`{"parts":[{"input":{"a":"` + "\xff" + `"},"raw":[1, 2 ,{}]}],"parts":[{"text":"merged"}]}`),
	}
	for _, m := range append(sampleMessages(), Message{Role: Assistant, Cut: true, Parts: []Part{{Type: TextPart, Text: "Hello"}}}) {
		m.Time = time.Date(2026, 12, 2, 16, 5, 4, 123456789, time.UTC)
		raw, err := EncodeMessage(m)
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, raw)
	}
	files, err := filepath.Glob("testdata/fuzz/FuzzDecodeMessage/*")
	if err != nil || len(files) == 0 {
		t.Fatalf("FuzzDecodeMessage's corpus: %v (%d files)", err, len(files))
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "[]byte("); ok {
				s, err := strconv.Unquote(strings.TrimSuffix(v, ")"))
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				seeds = append(seeds, []byte(s))
			}
		}
	}
	return seeds
}

// FuzzPack holds the packed copy of any message DecodeMessage reads to
// that message, and Unpack to never panicking on any bytes: an Unpack that
// succeeds gives messages that pack and unpack to themselves, and one on
// several goroutines gives what one on one goroutine gives, messages or
// error. Seeds: packSeeds, FuzzDecodeMessage's corpus among them, and
// packs in chunks of one and two messages (their index to damage).
func FuzzPack(f *testing.F) {
	for _, raw := range packSeeds(f) {
		f.Add(raw)
	}
	f.Add(AppendPacked(nil, sampleMessages()))
	for _, chunk := range []int{1, 2} {
		f.Add(appendPacked(nil, sampleMessages(), chunk))
		f.Add(appendPacked(nil, benchConversation(f, 9), chunk))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if m, err := DecodeMessage(raw); err == nil {
			samePacked(t, []Message{m, {Role: User}, m})
		}
		for _, data := range [][]byte{raw, append([]byte{packVersion}, raw...)} {
			msgs, err := unpack(data, 1, 0)
			// on several goroutines: the same messages, or the same error
			many, manyErr := unpack(data, 3, 0)
			if fmt.Sprint(err) != fmt.Sprint(manyErr) || !reflect.DeepEqual(msgs, many) {
				t.Fatalf("%q unpacked on one goroutine to %#v (%v), on three to %#v (%v)", data, msgs, err, many, manyErr)
			}
			if err != nil {
				continue
			}
			again, err := Unpack(AppendPacked(nil, msgs))
			if err != nil || !reflect.DeepEqual(again, msgs) {
				t.Fatalf("%q unpacked to %#v; packed again, to %#v (%v)", data, msgs, again, err)
			}
		}
	})
}
