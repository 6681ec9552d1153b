package collector

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"strings"
	"testing"
	"time"
)

func frame(flag byte, msg []byte) []byte {
	b := []byte{flag, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], uint32(len(msg)))
	return append(b, msg...)
}

func gzipped(b []byte) []byte {
	var out bytes.Buffer
	z := gzip.NewWriter(&out)
	z.Write(b)
	z.Close()
	return out.Bytes()
}

func TestFirstMessage(t *testing.T) {
	tests := []struct {
		name     string
		body     []byte
		encoding string
		want     string
		err      string
	}{
		{name: "none", body: nil},
		{name: "plain", body: frame(0, []byte("msg")), want: "msg"},
		{name: "gzip", body: frame(1, gzipped([]byte("msg"))), encoding: "gzip", want: "msg"},
		{name: "compressed but not gzip", body: frame(1, []byte("msg")), encoding: "snappy", err: "not gzip"},
		{name: "short prefix", body: []byte{0, 0, 0}, err: "5-byte prefix"},
		{name: "short message", body: frame(0, []byte("msg"))[:6], err: "says 3 bytes, 1 came"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := firstMessage(tt.body, tt.encoding)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("%q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestDecodeStatus(t *testing.T) {
	anyOf := func(typeURL string, value []byte) []byte {
		b := append([]byte{0x0a, byte(len(typeURL))}, typeURL...)
		return append(append(b, 0x12, byte(len(value))), value...)
	}
	// RetryInfo{retry_delay: Duration{seconds: 3, nanos: 500}}
	duration := []byte{0x08, 0x03, 0x10, 0xf4, 0x03}
	retryInfo := append([]byte{0x0a, byte(len(duration))}, duration...)
	detail := anyOf(retryInfoType, retryInfo)
	other := anyOf("type.googleapis.com/google.rpc.DebugInfo", []byte{0x0a, 0x01, 'x'})
	status := append([]byte{0x08, 0x08, 0x12, 0x04}, "full"...)
	status = append(append(status, 0x1a, byte(len(other))), other...)
	status = append(append(status, 0x1a, byte(len(detail))), detail...)
	status = append(status, 0x25, 1, 2, 3, 4) // an unknown fixed32 field, skipped

	st, err := decodeStatus(status)
	if err != nil {
		t.Fatal(err)
	}
	if st.code != 8 || st.message != "full" || !st.hasRetryInfo || st.retryDelay != 3*time.Second+500 {
		t.Errorf("%+v", st)
	}
	if _, err := decodeStatus(status[:len(status)-7]); err == nil {
		t.Error("a truncated status read without error")
	}
	if st, err := decodeStatus(append([]byte{0x08, 0x0e}, other...)[:2]); err != nil || st.hasRetryInfo {
		t.Errorf("%+v, %v: no RetryInfo", st, err)
	}
}
