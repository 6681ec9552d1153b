package anthropic

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/myelin-run/myelin/provider/providertest"
)

// framesOf is a stream of frames encoded by the AWS SDK's encoder.
func framesOf(t testing.TB, msgs ...eventstream.Message) []byte {
	var b bytes.Buffer
	for _, m := range msgs {
		if err := eventstream.NewEncoder().Encode(&b, m); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// theSDKsFrames is a stream of frames of every header value type.
func theSDKsFrames(t testing.TB) []byte {
	return framesOf(t,
		eventstream.Message{Headers: eventstream.Headers{
			{Name: ":message-type", Value: eventstream.StringValue("event")},
			{Name: ":event-type", Value: eventstream.StringValue("chunk")},
			{Name: "t", Value: eventstream.BoolValue(true)}, {Name: "f", Value: eventstream.BoolValue(false)},
			{Name: "i8", Value: eventstream.Int8Value(-3)}, {Name: "i16", Value: eventstream.Int16Value(300)},
			{Name: "i32", Value: eventstream.Int32Value(1 << 20)}, {Name: "i64", Value: eventstream.Int64Value(1 << 40)},
			{Name: "b", Value: eventstream.BytesValue("raw")},
			{Name: "ts", Value: eventstream.TimestampValue(time.UnixMilli(1700000000000))},
			{Name: "u", Value: eventstream.UUIDValue{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}},
		}, Payload: []byte(`{"bytes":"eyJ0eXBlIjoicGluZyJ9"}`)},
		eventstream.Message{Headers: eventstream.Headers{{Name: ":message-type", Value: eventstream.Int8Value(7)}}},
		eventstream.Message{},
	)
}

// sdkDecode is the SDK's decoder on the next frame of r; panicked says it
// panicked (as it did before v1.7 on a header value of an unknown type;
// it returns an error for one now).
func sdkDecode(r io.Reader) (msg eventstream.Message, err error, panicked bool) {
	defer func() {
		if recover() != nil {
			panicked = true
		}
	}()
	msg, err = (&eventstream.Decoder{}).Decode(r, nil)
	return msg, err, false
}

// A frame is read as the SDK's decoder reads it: the same frames
// accepted, with the same payload and the same value for each header,
// and refused where it refuses them (or panics). Where the SDK's decoder
// takes a frame whose headers end inside a value for the end of the
// stream, this one says so.
func FuzzReadFrameIsTheSDKsDecoder(f *testing.F) {
	f.Add(providertest.BedrockStream(providertest.Step{Text: "hi", ToolCalls: []providertest.ToolCall{{ID: "t1", Name: "n", Input: `{"a":1}`}}}))
	f.Add(providertest.BedrockException("throttlingException", "slow down"))
	f.Add(theSDKsFrames(f))
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 16, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		theirs, ours := bytes.NewReader(data), bytes.NewReader(data)
		for {
			msg, serr, panicked := sdkDecode(theirs)
			_, hs, payload, err := readFrame(ours, nil)
			if err == nil {
				_, _, _, err = hs.get(":message-type") // reads every header
			}
			switch {
			case panicked || serr != nil:
				if err == nil {
					t.Fatalf("the SDK refuses a frame (%v, panicked %v) that is read: % x", serr, panicked, data)
				}
				if err == io.EOF && serr != io.EOF {
					t.Fatalf("the end of the stream where the SDK says %v", serr)
				}
				return
			case err != nil:
				t.Fatalf("a frame the SDK reads is refused: %v: % x", err, data)
			}
			if !bytes.Equal(payload, msg.Payload) {
				t.Fatalf("payload %q, the SDK's %q", payload, msg.Payload)
			}
			for _, h := range msg.Headers {
				v, ok, aws, err := hs.get(h.Name)
				if err != nil || !ok {
					t.Fatalf("header %q: %v, %v", h.Name, ok, err)
				}
				if _, isString := h.Value.(eventstream.StringValue); isString == aws || (isString && string(v) != h.Value.String()) {
					t.Fatalf("header %q: %q (not a string: %v), the SDK's %#v", h.Name, v, aws, h.Value)
				}
			}
		}
	})
}

func TestAFrameIsReadAsTheSDKReadsIt(t *testing.T) {
	stream := theSDKsFrames(t)
	r := bytes.NewReader(stream)
	frame, hs, _, err := readFrame(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{":event-type": "chunk", "i16": eventstream.Int16Value(300).String(), "b": "cmF3", "t": "true"} {
		v, ok, aws, err := hs.get(name)
		got := string(v)
		if aws {
			got, ok, err = sdkHeader(frame, name)
		}
		if err != nil || !ok || got != want {
			t.Errorf("header %s: %q, %v, %v; want %q", name, got, ok, err, want)
		}
	}
	// a message type that is not a string is read as the SDK reads it
	// (not "event": passed over), and a frame without one is an error
	fr := &frameReader{r: bytes.NewReader(stream)}
	if !fr.Next() || string(fr.Event().Data) != `{"type":"ping"}` {
		t.Fatalf("the chunk: %q, %v", fr.Event().Data, fr.Err())
	}
	if fr.Next() || fr.Err() == nil || !strings.Contains(fr.Err().Error(), ":message-type") {
		t.Errorf("after a frame of message type Int8Value(7), one without any: %v", fr.Err())
	}
}

func TestAFrameThatFailsItsChecksumIsRefused(t *testing.T) {
	for name, corrupt := range map[string]func([]byte){
		"prelude": func(b []byte) { b[9] ^= 1 },
		"payload": func(b []byte) { b[len(b)-6] ^= 1 },
		"length": func(b []byte) {
			binary.BigEndian.PutUint32(b, 8)
			binary.BigEndian.PutUint32(b[8:], crc32.ChecksumIEEE(b[:8]))
		},
		"headers": func(b []byte) {
			binary.BigEndian.PutUint32(b[4:], binary.BigEndian.Uint32(b)) // more headers than the frame holds
			binary.BigEndian.PutUint32(b[8:], crc32.ChecksumIEEE(b[:8]))
		},
	} {
		frame := providertest.BedrockChunk([]byte(`{"type":"ping"}`))
		corrupt(frame)
		if _, _, _, err := readFrame(bytes.NewReader(frame), nil); err == nil || err == io.EOF {
			t.Errorf("%s: %v", name, err)
		}
	}
}
