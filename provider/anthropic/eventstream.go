package anthropic

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream/eventstreamapi"

	"github.com/myelin-run/myelin/internal/jsonscan"
	"github.com/myelin-run/myelin/internal/jsonstring"
	"github.com/myelin-run/myelin/internal/sse"
)

// Bedrock streams an answer as an AWS event stream
// (application/vnd.amazon.eventstream): binary frames, each "chunk" event
// carrying one event of the Messages API as base64 in a JSON payload.
// anthropic-sdk-go's bedrock middleware turned that back into server-sent
// event text — each frame's JSON decoded, its event type looked up in it,
// the text written to a buffer — which readStream then parsed again. With
// Platform.EventStream the wire reads the frames of a successful event
// stream itself (frameReader, chosen by awsEventStream). What each frame becomes is what
// the SDK's translation made of it: a chunk its event; an exception or
// error frame an "error" event shaped like the first-party API's, read as
// one. A stream that arrives as text/event-stream (a proxy that
// translates it) is read as server-sent events.

// awsEventStream reports whether res is a successful answer that comes
// as an AWS event stream (application/vnd.amazon.eventstream), whose
// frames a platform with EventStream reads.
func awsEventStream(res *http.Response) bool {
	if res.StatusCode >= http.StatusBadRequest {
		return false
	}
	mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	return mt == "application/vnd.amazon.eventstream"
}

// events is what readStream reads events from: an sse.Reader, or a
// frameReader.
type events interface {
	Next() bool
	Event() sse.Event
	Err() error
	// Release gives the reader back for a later answer's (it must not
	// be used after).
	Release()
}

// eventsOf is the reader of resp's body: its frames, or its server-sent
// events.
func eventsOf(resp *http.Response, frames bool) events {
	if frames {
		return borrowFrames(resp.Body)
	}
	return sse.Borrow(resp.Body)
}

// frameReader reads the frames of an AWS event stream (frame.go) as the
// events they carry. Its buffers are reused from frame to frame, and from
// answer to answer (borrowFrames): an event is valid until the next call
// of Next.
type frameReader struct {
	r     io.Reader
	frame []byte // the current frame, whole
	hs    frameHeaders
	data  []byte
	ev    sse.Event
	err   error
}

// frameReaders holds the frameReaders given back by Release.
var frameReaders sync.Pool

// borrowFrames is a frameReader of r, one given back when there is one.
func borrowFrames(r io.Reader) *frameReader {
	if f, _ := frameReaders.Get().(*frameReader); f != nil {
		f.r = r
		return f
	}
	return &frameReader{r: r}
}

// Release gives f back for a later borrowFrames, unless its buffers grew
// past 256 KiB (a huge frame is not kept).
func (f *frameReader) Release() {
	*f = frameReader{frame: f.frame[:0], data: f.data[:0]}
	if cap(f.frame)+cap(f.data) <= 256<<10 {
		frameReaders.Put(f)
	}
}

// Next reads frames up to the next that carries an event.
func (f *frameReader) Next() bool {
	for f.err == nil {
		var payload []byte
		f.frame, f.hs, payload, f.err = readFrame(f.r, f.frame)
		if f.err == nil && f.read(payload) {
			return true
		}
	}
	return false
}

// header is the value of the current frame's header name as a string,
// as the SDK's decoder reads it; ok is false when there is none.
func (f *frameReader) header(name string) (value string, ok bool, err error) {
	v, ok, aws, err := f.hs.get(name)
	if err != nil || !ok {
		return "", false, err
	}
	if aws {
		return sdkHeader(f.frame, name)
	}
	for _, known := range headerValues {
		if string(v) == known {
			return known, true, nil
		}
	}
	return string(v), true, nil
}

// headerValues are the values of the headers every frame has (its
// message type; an event's type), kept as one string each so that a
// frame does not allocate them.
var headerValues = [...]string{eventstreamapi.EventMessageType, eventstreamapi.ExceptionMessageType, eventstreamapi.ErrorMessageType, "chunk"}

// read makes the current frame, whose payload is payload, the current
// event, or reports that it carries none.
func (f *frameReader) read(payload []byte) bool {
	kind, ok, err := f.header(eventstreamapi.MessageTypeHeader)
	if err == nil && !ok {
		err = fmt.Errorf("%s event header not present", eventstreamapi.MessageTypeHeader)
	}
	if err != nil {
		f.err = err
		return false
	}
	switch kind {
	case eventstreamapi.EventMessageType:
		name, ok, err := f.header(eventstreamapi.EventTypeHeader)
		if err == nil && !ok {
			err = fmt.Errorf("%s event header not present", eventstreamapi.EventTypeHeader)
		}
		if err != nil {
			f.err = err
			return false
		}
		if name != "chunk" {
			return false
		}
		b64, err := chunkBytes(payload)
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
		name, ok, err := f.header(eventstreamapi.ExceptionTypeHeader)
		if err == nil && !ok {
			err = fmt.Errorf("%s event header not present", eventstreamapi.ExceptionTypeHeader)
		}
		if err != nil {
			f.err = err
			return false
		}
		var info struct {
			Code    string
			Type    string `json:"__type"`
			Message string
		}
		if err := json.Unmarshal(payload, &info); err != nil && err != io.EOF {
			f.err = fmt.Errorf("received exception %s: parsing exception payload failed: %w", name, err)
			return false
		}
		code := "UnknownError"
		switch {
		case name != "":
			code = name
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
		code, ok, err := f.header(eventstreamapi.ErrorCodeHeader)
		if err == nil && !ok {
			code = "UnknownError"
		}
		message, ok, merr := f.header(eventstreamapi.ErrorMessageHeader)
		if merr == nil && !ok {
			message = "UnknownError"
		}
		if err = errors.Join(err, merr); err != nil {
			f.err = err
			return false
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
	b = jsonstring.Append(b, code, true)
	b = append(b, `,"message":`...)
	b = jsonstring.Append(b, message, true)
	f.data = append(b, "}}"...)
	f.ev = sse.Event{Name: "error", Data: f.data}
}

// chunkBytes is the "bytes" member of a chunk's payload
// ({"bytes":"BASE64","p":"..."}), taken from the payload as it is when
// it is a plain string, else decoded by encoding/json.
func chunkBytes(payload []byte) ([]byte, error) {
	s := jsonscan.Scanner{B: payload}
	if s.Next('{') {
		for ok := true; ok; ok = s.Next(',') {
			s.WS()
			key, ok := s.PlainString()
			if !ok || !s.Next(':') {
				break
			}
			s.WS()
			if string(key) == "bytes" {
				if raw, ok := s.PlainString(); ok {
					return raw, nil
				}
				break
			}
			if !s.Skip() {
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
