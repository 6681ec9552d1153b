package otlpwire

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

func TestEndMessageWritesTheLengthOfEveryVarintSize(t *testing.T) {
	for _, n := range []int{0, 1, 127, 128, 300, 16383, 16384, 1<<21 - 1, 1 << 21} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			body := bytes.Repeat([]byte{0xab}, n)
			b, start := beginMessage([]byte("before"), 7)
			b = append(b, body...)
			b = endMessage(b, start)
			want := protowire.AppendBytes(protowire.AppendTag([]byte("before"), 7, protowire.BytesType), body)
			if !bytes.Equal(b, want) {
				t.Fatalf("a %d-byte message: wrote %d bytes, want %d (the protobuf encoding)", n, len(b), len(want))
			}
		})
	}
}

func TestVarintsAndZigzagAreProtowires(t *testing.T) {
	for _, v := range []uint64{0, 1, 127, 128, 1<<63 - 1, math.MaxUint64} {
		if got, want := appendVarint(nil, v), protowire.AppendVarint(nil, v); !bytes.Equal(got, want) || varintSize(v) != len(want) {
			t.Errorf("varint %d: wrote %x (size %d), want %x", v, got, varintSize(v), want)
		}
	}
	for _, v := range []int32{0, 1, -1, 63, -64, math.MaxInt32, math.MinInt32} {
		got := appendSint32Field(nil, 1, v)
		var want []byte
		if v != 0 {
			want = protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), protowire.EncodeZigZag(int64(v)))
		}
		if !bytes.Equal(got, want) {
			t.Errorf("sint32 %d: wrote %x, want %x", v, got, want)
		}
	}
}
