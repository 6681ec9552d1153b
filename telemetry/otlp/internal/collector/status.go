package collector

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// rpcStatus is what this package reads of a google.rpc.Status: its
// message and the delay of a google.rpc.RetryInfo among its details.
type rpcStatus struct {
	code         int64
	message      string
	hasRetryInfo bool
	retryDelay   time.Duration
}

const retryInfoType = "type.googleapis.com/google.rpc.RetryInfo"

// decodeStatus reads a google.rpc.Status (code 1, message 2, details 3:
// google.protobuf.Any with type_url 1 and value 2) by hand.
func decodeStatus(b []byte) (rpcStatus, error) {
	var st rpcStatus
	err := fields(b, func(num int, varint uint64, bytes []byte) error {
		switch num {
		case 1:
			st.code = int64(int32(varint))
		case 2:
			st.message = string(bytes)
		case 3:
			var typeURL string
			var value []byte
			if err := fields(bytes, func(num int, _ uint64, b []byte) error {
				switch num {
				case 1:
					typeURL = string(b)
				case 2:
					value = b
				}
				return nil
			}); err != nil {
				return err
			}
			if typeURL == retryInfoType {
				d, err := decodeRetryInfo(value)
				if err != nil {
					return err
				}
				st.hasRetryInfo, st.retryDelay = true, d
			}
		}
		return nil
	})
	return st, err
}

// decodeRetryInfo reads a google.rpc.RetryInfo: retry_delay (1), a
// google.protobuf.Duration of seconds (1) and nanos (2).
func decodeRetryInfo(b []byte) (time.Duration, error) {
	var d time.Duration
	err := fields(b, func(num int, _ uint64, b []byte) error {
		if num != 1 {
			return nil
		}
		var secs, nanos int64
		if err := fields(b, func(num int, v uint64, _ []byte) error {
			switch num {
			case 1:
				secs = int64(v)
			case 2:
				nanos = int64(int32(v))
			}
			return nil
		}); err != nil {
			return err
		}
		if secs < 0 || nanos < 0 || secs > int64(time.Hour*24*365/time.Second) {
			return fmt.Errorf("a retry delay of %ds %dns", secs, nanos)
		}
		d = time.Duration(secs)*time.Second + time.Duration(nanos)
		return nil
	})
	return d, err
}

var errTruncated = errors.New("collector: a truncated protobuf message")

// fields calls f with each field of the protobuf message b: its number and
// its value, a varint or the bytes of a length-delimited field (fixed
// fields are skipped; groups are an error).
func fields(b []byte, f func(num int, varint uint64, bytes []byte) error) error {
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		if n <= 0 {
			return errTruncated
		}
		b = b[n:]
		num := int(key >> 3)
		var v uint64
		var bs []byte
		switch key & 7 {
		case 0:
			v, n = binary.Uvarint(b)
			if n <= 0 {
				return errTruncated
			}
			b = b[n:]
		case 1:
			if len(b) < 8 {
				return errTruncated
			}
			b = b[8:]
			continue
		case 2:
			l, n := binary.Uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return errTruncated
			}
			bs, b = b[n:n+int(l)], b[n+int(l):]
		case 5:
			if len(b) < 4 {
				return errTruncated
			}
			b = b[4:]
			continue
		default:
			return fmt.Errorf("collector: protobuf wire type %d", key&7)
		}
		if err := f(num, v, bs); err != nil {
			return err
		}
	}
	return nil
}
