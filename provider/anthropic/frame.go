package anthropic

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// An AWS event stream frame is read here, in place, instead of by the AWS
// SDK's eventstream.Decoder, which read each frame in a dozen small reads
// through a checksumming tee and made a string or a slice for every
// header name and value: on Bedrock that was about a third of the wire's
// CPU for a light round (docs/overhead.md, "Agent CPU per round, second
// pass"). The format (the AWS SDK's eventstream package; the limits are
// those it had until v1.7, 128 KiB of headers and 16 MiB of payload,
// which this reader keeps though the SDK's decoder no longer does): a prelude of the frame's total length and its headers'
// length (big-endian uint32 each) and the prelude's CRC-32; the headers,
// each a name (one length byte, the name) and a typed value; the payload;
// the CRC-32 of all before it. A frame within those limits is accepted
// when the SDK's decoder accepts it, with the same headers and payload
// (FuzzReadFrameIsTheSDKsDecoder); where the SDK's decoder would read a
// frame whose headers end inside a value as the stream's end, this one
// says the frame is malformed.

const (
	preludeLen    = 12 // total length, headers' length, prelude CRC
	frameCRCLen   = 4
	maxHeadersLen = 128 << 10
	maxPayloadLen = 16 << 20
	maxFrameLen   = preludeLen + frameCRCLen + maxHeadersLen + maxPayloadLen
)

// The types of header values (the size of each fixed-size one is in
// valueSize).
const (
	boolTrue = iota
	boolFalse
	int8Value
	int16Value
	int32Value
	int64Value
	bytesValue
	stringValue
	timestampValue
	uuidValue
)

var valueSize = [...]int{boolTrue: 0, boolFalse: 0, int8Value: 1, int16Value: 2, int32Value: 4, int64Value: 8, timestampValue: 8, uuidValue: 16}

// readFrame reads the next frame from r into buf (grown as needed) and
// returns it whole, its headers and its payload, all within buf. At the
// end of the stream, between two frames, it returns io.EOF.
func readFrame(r io.Reader, buf []byte) (frame []byte, headers frameHeaders, payload []byte, _ error) {
	// the prelude is read into buf, not into an array of its own, which
	// the reader's interface would make escape: an allocation a frame
	buf = slices.Grow(buf[:0], preludeLen)[:preludeLen]
	pre := buf
	if _, err := io.ReadFull(r, pre); err != nil {
		if err == io.ErrUnexpectedEOF {
			err = fmt.Errorf("the event stream ended inside a frame's prelude: %w", err)
		}
		return buf, nil, nil, err
	}
	total := binary.BigEndian.Uint32(pre[0:4])
	hlen := binary.BigEndian.Uint32(pre[4:8])
	switch {
	case total < preludeLen+frameCRCLen || total > maxFrameLen:
		return buf, nil, nil, fmt.Errorf("an event stream frame of %d bytes (from %d to %d)", total, preludeLen+frameCRCLen, maxFrameLen)
	case hlen > maxHeadersLen || hlen > total-preludeLen-frameCRCLen:
		return buf, nil, nil, fmt.Errorf("an event stream frame of %d bytes with %d bytes of headers", total, hlen)
	case total-preludeLen-frameCRCLen-hlen > maxPayloadLen:
		return buf, nil, nil, fmt.Errorf("an event stream frame's payload of %d bytes (%d at most)", total-preludeLen-frameCRCLen-hlen, maxPayloadLen)
	}
	if crc := crc32.ChecksumIEEE(pre[:8]); crc != binary.BigEndian.Uint32(pre[8:12]) {
		return buf, nil, nil, errors.New("an event stream frame's prelude fails its checksum")
	}
	var err error
	if int(total) <= max(cap(buf), 64<<10) {
		buf = slices.Grow(buf, int(total)-preludeLen)[:total]
		_, err = io.ReadFull(r, buf[preludeLen:])
	} else {
		// a large frame: the buffer grows as its bytes arrive, not
		// before, whatever length the prelude claims
		b := bytes.NewBuffer(buf)
		_, err = io.CopyN(b, r, int64(total-preludeLen))
		buf = b.Bytes()
	}
	if err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			err = fmt.Errorf("the event stream ended inside a frame of %d bytes: %w", total, io.ErrUnexpectedEOF)
		}
		return buf, nil, nil, err
	}
	end := total - frameCRCLen
	if crc := crc32.ChecksumIEEE(buf[:end]); crc != binary.BigEndian.Uint32(buf[end:]) {
		return buf, nil, nil, errors.New("an event stream frame fails its checksum")
	}
	return buf, buf[preludeLen : preludeLen+hlen], buf[preludeLen+hlen : end], nil
}

// frameHeaders is the headers of one frame, as read by readFrame.
type frameHeaders []byte

// get is the value of the header name, the last one so named, as the
// SDK's Headers.Get gives it (a name set twice keeps its last value); ok
// is false when there is none. When that header's value is not a string,
// aws is true: only the SDK's decoder says what it reads as.
func (hs frameHeaders) get(name string) (value []byte, ok, aws bool, err error) {
	for b := []byte(hs); len(b) > 0; {
		n := int(b[0])
		if 1+n+1 > len(b) {
			return nil, false, false, errors.New("an event stream frame's header ends inside its name")
		}
		key, typ := b[1:1+n], b[1+n]
		b = b[2+n:]
		var v []byte
		switch {
		case typ == bytesValue || typ == stringValue:
			if len(b) < 2 || 2+int(binary.BigEndian.Uint16(b)) > len(b) {
				return nil, false, false, fmt.Errorf("an event stream frame's header %q ends inside its value", key)
			}
			v, b = b[2:2+int(binary.BigEndian.Uint16(b))], b[2+int(binary.BigEndian.Uint16(b)):]
		case int(typ) < len(valueSize) && (typ <= int64Value || typ >= timestampValue):
			if valueSize[typ] > len(b) {
				return nil, false, false, fmt.Errorf("an event stream frame's header %q ends inside its value", key)
			}
			v, b = b[:valueSize[typ]], b[valueSize[typ]:]
		default:
			return nil, false, false, fmt.Errorf("an event stream frame's header %q has a value of an unknown type, %d", key, typ)
		}
		if string(key) == name {
			value, ok, aws = v, true, typ != stringValue
		}
	}
	return value, ok, aws, nil
}

// sdkHeader is the header name of frame as the SDK's decoder reads it:
// for a header whose value is not a string (frameHeaders.get).
func sdkHeader(frame []byte, name string) (string, bool, error) {
	msg, err := (&eventstream.Decoder{}).Decode(bytes.NewReader(frame), nil)
	if err != nil {
		return "", false, err
	}
	v := msg.Headers.Get(name)
	if v == nil {
		return "", false, nil
	}
	return v.String(), true, nil
}
