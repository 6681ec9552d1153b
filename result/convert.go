package result

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// converted is a result's full text before the cap: the output of the one
// conversion, which Round then bounds.
type converted struct {
	text       string
	isError    bool
	endTurn    bool
	images     []Image
	structured json.RawMessage
	files      []string
	big        *piece // the text of a TextFile over its cap: its head, counts and spill
	repaired   int    // ill-formed sequences replaced with U+FFFD (contract §3)
}

// Image is an image that goes natively on the wire. Its placeholder,
// `[image: <mime>, <size>]`, stands in the text where the block was.
type Image struct {
	MIMEType string `json:"mime_type"` // e.g. image/png
	Data     []byte `json:"data"`      // the image's bytes
}

// converter turns one result into text. label names the files its payloads
// are saved to (label-1.png, label-2.wav, ...).
type converter struct {
	store    Store
	label    spillLabel
	cap      int // the call's cap, for a TextFile: how much of its head to keep
	n        int // payloads saved so far, for their names
	out      converted
	lost     []string  // payloads that could not be saved
	payloads []payload // the payloads that became stubs or placeholders

	fileBytes int64  // the size of a TextFile's file
	big       *piece // a TextFile over its cap, spilled from the file itself
}

func convert(r Result, store Store, label spillLabel, cap int) converted {
	c := &converter{store: store, label: label, cap: cap}
	c.out.isError = r.IsError
	c.out.endTurn = r.EndTurn
	if r.Structured != nil {
		raw, err := JSON(r.Structured)
		if err != nil {
			discard(r.Data)
			return converted{text: "the tool's structured content could not be encoded as JSON: " + err.Error(), isError: true, endTurn: r.EndTurn}
		}
		c.out.structured = raw
	}
	text, err := c.data(r.Data)
	if err != nil {
		return converted{text: err.Error(), isError: true, endTurn: r.EndTurn, files: c.out.files}
	}
	if len(c.lost) > 0 {
		msg := "part of this result was lost: " + strings.Join(c.lost, "; ")
		if text != "" {
			msg += "\nwhat could be kept:\n" + text
		}
		return converted{text: msg, isError: true, endTurn: r.EndTurn, files: c.out.files, structured: c.out.structured}
	}
	if c.big != nil {
		c.out.big = c.big
		return c.out
	}
	if c.out.structured != nil && (!hasTextOfItsOwn(r.Data) || isTextFile(r.Data) && c.fileBytes == 0) {
		// what myelin wrote (stubs, placeholders, links) is not the tool's
		// text: the structured content follows it
		if text != "" {
			text += "\n"
		}
		text += string(c.inStubs(c.out.structured))
	}
	c.out.text = text
	return c.out
}

// hasTextOfItsOwn reports whether data holds text the tool wrote: a
// non-empty string, a text block with text in it, an embedded text resource
// or a block myelin does not know (its JSON is the tool's own); or any other
// value, whose JSON is its text. Without it, the model reads the structured
// content (contract §4). Image placeholders, stubs of saved payloads and
// resource-link lines are myelin's words, not the tool's.
func hasTextOfItsOwn(data any) bool {
	switch d := data.(type) {
	case nil:
		return false
	case string:
		return d != ""
	case []byte:
		return len(d) > 0
	case []Block:
		for _, b := range d {
			if blockHasText(b) {
				return true
			}
		}
		return false
	case Block:
		return blockHasText(d)
	}
	return true
}

func isTextFile(data any) bool {
	switch data.(type) {
	case TextFile, *TextFile:
		return true
	}
	return false
}

func blockHasText(b Block) bool {
	switch b := byValue(b).(type) {
	case TextBlock:
		return b.Text != ""
	case ResourceBlock:
		return b.Blob == nil
	case UnknownBlock:
		return true
	}
	return false
}

// data converts Result.Data. An error return is an error result whose text
// is the error's message.
func (c *converter) data(data any) (string, error) {
	switch d := data.(type) {
	case nil:
		return "", nil
	case string:
		return c.str(d), nil
	case []byte:
		return c.str(string(d)), nil
	case error:
		c.out.isError = true
		return c.str(d.Error()), nil
	case []Block:
		return c.blocks(d), nil
	case Block:
		return c.blocks([]Block{d}), nil
	case TextFile:
		return c.file(d)
	case *TextFile:
		if d != nil {
			return c.file(*d)
		}
		return "", nil
	case Result, *Result:
		return "", fmt.Errorf("a tool returned a Result inside a Result's Data (%T); return the Result itself", d)
	}
	raw, err := JSON(data)
	if err != nil {
		return "", fmt.Errorf("the tool's result (%s) could not be encoded as JSON: %w", typeName(data), err)
	}
	return string(raw), nil
}

func typeName(v any) string {
	if v == nil {
		return "nil"
	}
	return reflect.TypeOf(v).String()
}

// str is contract §2's string rule: the string itself when it is plain text,
// made well formed when it has a few bad bytes, and saved as a file with a
// stub in its place when it is not text at all.
func (c *converter) str(s string) string {
	if isPlainText(s) {
		return s
	}
	if strings.IndexByte(s, 0) < 0 {
		fixed, bad := repair(s)
		if !isBinary(Chars(fixed), bad) {
			c.out.repaired += bad
			return fixed
		}
	}
	mime := sniff(s)
	return c.save("binary", mime, s)
}

// isBinary is the line between text with a few bad bytes, shown with U+FFFD,
// and output that is not text: of the chars characters the text has once
// made well formed, more than 30% are the U+FFFD of its bad ill-formed
// sequences. A sequence counts once however many bytes it had, and a
// surrogate in UTF-8 form counts as text (repairTo), so one lone surrogate
// in a short string never makes it binary.
func isBinary(chars, bad int) bool { return bad*10 > chars*3 }

// save writes a payload to the store and returns its stub; a payload that
// cannot be saved is recorded as lost, which makes the result an error.
func (c *converter) save(kind, mime, data string) string {
	stub, _ := c.saveWith(func(name string) (string, error) {
		if c.store == nil {
			return "", ErrNoWorkspace
		}
		return c.store.Save(name, data)
	}, kind, mime, int64(len(data)))
	c.payloads = append(c.payloads, payload{data, stub})
	return stub
}

// payload is bytes that a stub or placeholder stands for in the text.
type payload struct{ data, stub string }

// inStubs is structured content as the model reads it: a JSON string in it
// that is the base64 of a payload the result's blocks carried (servers
// echo their content in structuredContent) becomes that payload's stub or
// placeholder, so that bytes never reach the text as base64 (contract §4).
// Programs get the structured content whole.
func (c *converter) inStubs(raw json.RawMessage) json.RawMessage {
	for _, p := range c.payloads {
		if len(p.data) < 16 {
			continue // too short to be taken for anything but itself
		}
		b64 := base64.StdEncoding.EncodeToString([]byte(p.data))
		stub, _ := JSON(p.stub)
		for _, form := range []string{b64, strings.ReplaceAll(b64, "/", `\/`)} {
			raw = bytes.ReplaceAll(raw, []byte(`"`+form+`"`), stub)
		}
	}
	return raw
}

// saveWith names a payload of size bytes, has put save it under that name
// and returns its stub, recording it as lost when put fails.
func (c *converter) saveWith(put func(name string) (string, error), kind, mime string, size int64) (string, error) {
	c.n++
	mime = stubField(mime)
	if mime == "" {
		mime = "application/octet-stream"
	}
	name := fmt.Sprintf("%s-%d%s", c.label.String(), c.n, extension(mime))
	path, err := put(name)
	if err != nil {
		c.lost = append(c.lost, fmt.Sprintf("%s (%s, %d bytes) could not be saved to the workspace: %v", kind, mime, size, err))
		return fmt.Sprintf("[%s: %s, %d bytes, not saved]", kind, mime, size), err
	}
	c.out.files = append(c.out.files, path)
	return fmt.Sprintf("[%s: %s, %d bytes, saved to workspace file %s]", kind, mime, size, path), nil
}

func (c *converter) blocks(bs []Block) string {
	parts := make([]string, 0, len(bs))
	for _, b := range bs {
		parts = append(parts, c.block(b))
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return strings.Join(parts, "\n")
}

func (c *converter) block(b Block) string {
	switch b := byValue(b).(type) {
	case TextBlock:
		return c.str(b.Text)
	case ImageBlock:
		return c.image(b)
	case AudioBlock:
		return c.save("audio", b.MIMEType, string(b.Data))
	case ResourceBlock:
		return c.resource(b)
	case ResourceLinkBlock:
		return fmt.Sprintf("[resource link %q: %s; not fetched]", stubField(b.Name), stubField(b.URI))
	case UnknownBlock:
		return c.unknown(b.Raw)
	}
	return c.unknown(nil) // a nil pointer block
}

// byValue turns a pointer to a block into the block, so that a tool may
// return either; a nil pointer stays as it is.
func byValue(b Block) Block {
	switch p := b.(type) {
	case *TextBlock:
		if p != nil {
			return *p
		}
	case *ImageBlock:
		if p != nil {
			return *p
		}
	case *AudioBlock:
		if p != nil {
			return *p
		}
	case *ResourceBlock:
		if p != nil {
			return *p
		}
	case *ResourceLinkBlock:
		if p != nil {
			return *p
		}
	case *UnknownBlock:
		if p != nil {
			return *p
		}
	}
	return b
}

func (c *converter) image(b ImageBlock) string {
	mime := stubField(b.MIMEType)
	if mime == "" {
		mime = sniff(string(b.Data))
	}
	c.out.images = append(c.out.images, Image{MIMEType: mime, Data: b.Data})
	placeholder := fmt.Sprintf("[image: %s, %d bytes]", mime, len(b.Data))
	c.payloads = append(c.payloads, payload{string(b.Data), placeholder})
	return placeholder
}

func (c *converter) resource(b ResourceBlock) string {
	if b.Blob != nil {
		return c.save("resource "+stubField(b.URI), b.MIMEType, string(b.Blob))
	}
	mime := stubField(b.MIMEType)
	if mime == "" {
		mime = "text/plain"
	}
	return fmt.Sprintf("[resource %s, %s]\n%s", stubField(b.URI), mime, c.str(b.Text))
}

func (c *converter) unknown(raw json.RawMessage) string {
	out, err := JSON(raw)
	if len(raw) == 0 || err != nil {
		return `{"type":"unknown"}`
	}
	return string(out)
}

// stubField bounds a field that a server chose (a MIME type, a URI, a name)
// before it goes into a stub: well formed, on one line, at most 200
// characters.
func stubField(s string) string {
	s = WellFormed(s)
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if cut := CharOffset(s, stubFieldMax); cut < len(s) {
		return s[:CharOffset(s, stubFieldMax-1)] + "…"
	}
	return s
}

const stubFieldMax = 200

// JSON is the deterministic compact JSON of contract §2: map keys sorted
// (encoding/json sorts them), `<`, `>` and `&` as themselves, no trailing
// newline. A json.RawMessage is compacted, and must be valid; its strings
// are made well formed as contract §3 says for text (it may come as a server
// sent it). It is how the conversion writes other values, and how the store
// writes what it keeps.
func JSON(v any) (json.RawMessage, error) {
	if raw, ok := v.(json.RawMessage); ok {
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return nil, fmt.Errorf("not valid JSON: %w", err)
		}
		return wellFormedJSON(buf.Bytes()), nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// sniff names the type of a binary payload from its first bytes, for its stub
// and its file's extension.
func sniff(s string) string {
	for _, m := range magic {
		if strings.HasPrefix(s, m.prefix) {
			return m.mime
		}
	}
	return "application/octet-stream"
}

var magic = []struct{ prefix, mime string }{
	{"\x89PNG\r\n\x1a\n", "image/png"},
	{"\xff\xd8\xff", "image/jpeg"},
	{"GIF8", "image/gif"},
	{"%PDF-", "application/pdf"},
	{"\x1f\x8b", "application/gzip"},
	{"PK\x03\x04", "application/zip"},
	{"\x7fELF", "application/x-executable"},
	{"RIFF", "audio/wav"},
}

// extension is the file name ending for a payload of the given MIME type.
func extension(mime string) string {
	if i := strings.IndexByte(mime, ';'); i >= 0 {
		mime = mime[:i]
	}
	switch strings.TrimSpace(strings.ToLower(mime)) {
	case "image/png":
		return ".png"
	case "image/jpeg", "image/jpg":
		return ".jpg"
	case "image/gif":
		return ".gif"
	case "image/webp":
		return ".webp"
	case "audio/wav", "audio/x-wav", "audio/wave":
		return ".wav"
	case "audio/mpeg", "audio/mp3":
		return ".mp3"
	case "audio/ogg":
		return ".ogg"
	case "application/pdf":
		return ".pdf"
	case "application/gzip":
		return ".gz"
	case "application/zip":
		return ".zip"
	case "application/json":
		return ".json"
	case "text/plain":
		return ".txt"
	}
	return ".bin"
}
