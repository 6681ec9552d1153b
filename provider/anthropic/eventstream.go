package anthropic

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream/eventstreamapi"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/sse"
)

// Bedrock streams an answer as an AWS event stream
// (application/vnd.amazon.eventstream): binary frames, each "chunk" event
// carrying one event of the Messages API as base64 in a JSON payload. The
// SDK's bedrock middleware turns that back into server-sent event text —
// each frame's JSON decoded, its event type looked up in it, the text
// written to a buffer — which readStream would then parse again. With
// Platform.EventStream the wire reads the frames itself instead
// (frameReader): keepEventStream, which the SDK runs inside its bedrock
// middleware, gives a successful event stream another media type, which
// that middleware leaves alone. What each frame becomes is what the SDK's
// translation made of it: a chunk its event; an exception or error frame
// an "error" event shaped like the first-party API's, read as one. A
// stream that still arrives as text/event-stream (an SDK that translates
// whatever the media type) is read as before.

// keptEventStream is the media type keepEventStream gives an event stream.
const keptEventStream = "application/x-myelin-amazon-eventstream"

// keepEventStream is the middleware, closest to the wire, that renames the
// media type of a successful AWS event stream to keptEventStream. It
// changes nothing else, and no error answer: the SDK reads those.
var keepEventStream option.Middleware = func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	res, err := next(r)
	if err != nil || res == nil || res.StatusCode >= http.StatusBadRequest {
		return res, err
	}
	if mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); mt == "application/vnd.amazon.eventstream" {
		res.Header.Set("Content-Type", keptEventStream)
	}
	return res, nil
}

// events is what readStream reads events from: an sse.Reader, or a
// frameReader.
type events interface {
	Next() bool
	Event() sse.Event
	Err() error
}

// eventsOf is the reader of resp's body by its media type.
func eventsOf(resp *http.Response) events {
	if resp.Header.Get("Content-Type") == keptEventStream {
		return &frameReader{r: resp.Body}
	}
	return sse.NewReader(resp.Body)
}

// frameReader reads the frames of an AWS event stream as the events they
// carry. Its buffers are reused from frame to frame: an event is valid
// until the next call of Next.
type frameReader struct {
	r       io.Reader
	dec     eventstream.Decoder
	payload []byte
	data    []byte
	ev      sse.Event
	err     error
}

// Next reads frames up to the next that carries an event.
func (f *frameReader) Next() bool {
	for f.err == nil {
		msg, err := f.dec.Decode(f.r, f.payload[:0])
		if err != nil {
			f.err = err
			return false
		}
		f.payload = msg.Payload
		if f.frame(msg) {
			return true
		}
	}
	return false
}

// frame makes msg the current event, or reports that it carries none.
func (f *frameReader) frame(msg eventstream.Message) bool {
	kind := msg.Headers.Get(eventstreamapi.MessageTypeHeader)
	if kind == nil {
		f.err = fmt.Errorf("%s event header not present", eventstreamapi.MessageTypeHeader)
		return false
	}
	switch kind.String() {
	case eventstreamapi.EventMessageType:
		name := msg.Headers.Get(eventstreamapi.EventTypeHeader)
		if name == nil {
			f.err = fmt.Errorf("%s event header not present", eventstreamapi.EventTypeHeader)
			return false
		}
		if name.String() != "chunk" {
			return false
		}
		b64, err := chunkBytes(msg.Payload)
		if err != nil {
			f.err = err
			return false
		}
		f.data = f.data[:0]
		if f.data, err = base64.StdEncoding.AppendDecode(f.data, b64); err != nil {
			f.err = err
			return false
		}
		f.ev = sse.Event{Name: "chunk", Data: f.data}
		return true
	case eventstreamapi.ExceptionMessageType:
		name := msg.Headers.Get(eventstreamapi.ExceptionTypeHeader)
		if name == nil {
			f.err = fmt.Errorf("%s event header not present", eventstreamapi.ExceptionTypeHeader)
			return false
		}
		var info struct {
			Code    string
			Type    string `json:"__type"`
			Message string
		}
		if err := json.Unmarshal(msg.Payload, &info); err != nil && err != io.EOF {
			f.err = fmt.Errorf("received exception %s: parsing exception payload failed: %w", name.String(), err)
			return false
		}
		code := "UnknownError"
		switch {
		case name.String() != "":
			code = name.String()
		case info.Code != "":
			code = info.Code
		case info.Type != "":
			code = info.Type
		}
		message := "UnknownError"
		if info.Message != "" {
			message = info.Message
		}
		f.errorEvent(code, message)
		return true
	case eventstreamapi.ErrorMessageType:
		code, message := "UnknownError", "UnknownError"
		if h := msg.Headers.Get(eventstreamapi.ErrorCodeHeader); h != nil {
			code = h.String()
		}
		if h := msg.Headers.Get(eventstreamapi.ErrorMessageHeader); h != nil {
			message = h.String()
		}
		f.errorEvent(code, message)
		return true
	}
	return false
}

// errorEvent makes current an error event shaped like the first-party
// API's: {"type":"error","error":{"type":code,"message":message}}.
func (f *frameReader) errorEvent(code, message string) {
	b := append(f.data[:0], `{"type":"error","error":{"type":`...)
	b = provider.AppendJSONString(b, code, true)
	b = append(b, `,"message":`...)
	b = provider.AppendJSONString(b, message, true)
	f.data = append(b, "}}"...)
	f.ev = sse.Event{Name: "error", Data: f.data}
}

// chunkBytes is the "bytes" member of a chunk's payload
// ({"bytes":"BASE64","p":"..."}), taken from the payload as it is when
// it is a plain string, else decoded by encoding/json.
func chunkBytes(payload []byte) ([]byte, error) {
	s := scanner{b: payload}
	if s.next('{') {
		for ok := true; ok; ok = s.next(',') {
			s.ws()
			key, ok := s.plainString()
			if !ok || !s.next(':') {
				break
			}
			s.ws()
			if string(key) == "bytes" {
				if raw, ok := s.plainString(); ok {
					return raw, nil
				}
				break
			}
			if !s.skip() {
				break
			}
		}
	}
	var chunk struct {
		Bytes string `json:"bytes"`
	}
	if err := json.Unmarshal(payload, &chunk); err != nil {
		return nil, err
	}
	return []byte(chunk.Bytes), nil
}

// Event is the event Next read last.
func (f *frameReader) Event() sse.Event { return f.ev }

// Err is what stopped the stream: nil at its end.
func (f *frameReader) Err() error {
	if f.err == io.EOF {
		return nil
	}
	return f.err
}
