package history

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/myelin-run/myelin/result"
)

// benchRows are the stored bytes of a conversation of n messages, the one
// BenchmarkDecodeConversation reads: an answer with a call, its result,
// over and over.
func benchRows(t testing.TB, n int) [][]byte {
	var raws [][]byte
	for i := 0; i < n; i += 2 {
		for _, m := range []Message{
			{Role: Assistant, Parts: []Part{{Type: TextPart, Text: "Let me read the next file."},
				{Type: ToolCallPart, CallID: fmt.Sprintf("toolu_%d", i), Name: "workspace--read", Input: json.RawMessage(`{"path":"src/main.go"}`)}},
				Usage: &Usage{Input: 3, Output: 40, CacheRead: 1000 + i*60}, Time: time.Now()},
			{Role: User, Parts: []Part{{Type: ToolResultPart, CallID: fmt.Sprintf("toolu_%d", i),
				Text: "     1\tpackage main\n     2\t\n     3\tfunc main() {}\n[lines 1-3 of 3 in src/main.go; end of file]"}}, Time: time.Now()},
		} {
			raw, err := result.JSON(m)
			if err != nil {
				t.Fatal(err)
			}
			raws = append(raws, raw)
		}
	}
	return raws[:n]
}

// benchConversation is benchRows' messages as a store reads them.
func benchConversation(t testing.TB, n int) []Message {
	msgs := make([]Message, n)
	for i, raw := range benchRows(t, n) {
		m, err := DecodeMessage(raw)
		if err != nil {
			t.Fatal(err)
		}
		msgs[i] = m
	}
	return msgs
}

var (
	packSink  []Message
	bytesSink []byte
)

// BenchmarkUnpack reads a conversation of 10k and of 100k messages back:
// unpack, Unpack of its packed copy; decoder, one Decoder over its stored
// rows (what a store's read does after stepping the rows); copy, the
// packed bytes copied into a fresh buffer, the floor of any read of them;
// alloc, the messages, parts and usages Unpack allocates, allocated and
// each message given its parts and usage, the floor of any reader that
// gives back the same []Message.
// pack is AppendPacked's cost, into a fresh buffer. MB/s is of each one's
// input: the packed bytes, or the stored rows. Run:
//
//	go test ./history -run '^$' -bench 'Unpack' -count 6 -benchmem
func BenchmarkUnpack(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		raws := benchRows(b, n)
		msgs := benchConversation(b, n)
		packed := AppendPacked(nil, msgs)
		rows := 0
		for _, raw := range raws {
			rows += len(raw)
		}
		size := fmt.Sprintf("%dk", n/1000)
		b.Run("unpack/"+size, func(b *testing.B) {
			b.SetBytes(int64(len(packed)))
			for b.Loop() {
				got, err := Unpack(packed)
				if err != nil {
					b.Fatal(err)
				}
				packSink = got
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/msg")
		})
		b.Run("decoder/"+size, func(b *testing.B) {
			b.SetBytes(int64(rows))
			for b.Loop() {
				got := make([]Message, n)
				var d Decoder
				left := rows
				for i, raw := range raws {
					m, err := d.Message(raw, left)
					if err != nil {
						b.Fatal(err)
					}
					left -= len(raw)
					got[i] = m
				}
				packSink = got
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/msg")
		})
		b.Run("copy/"+size, func(b *testing.B) {
			b.SetBytes(int64(len(packed)))
			for b.Loop() {
				buf := make([]byte, len(packed))
				copy(buf, packed)
				bytesSink = buf
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/msg")
		})
		b.Run("alloc/"+size, func(b *testing.B) {
			parts, usages := 0, 0
			for _, m := range msgs {
				parts += len(m.Parts)
				if m.Usage != nil {
					usages++
				}
			}
			b.SetBytes(int64(len(packed)))
			for b.Loop() {
				got, all, us := make([]Message, n), make([]Part, parts), make([]Usage, usages)
				for i := range got {
					k := len(msgs[i].Parts)
					got[i].Parts, all = all[:k:k], all[k:]
					if msgs[i].Usage != nil {
						got[i].Usage, us = &us[0], us[1:]
					}
				}
				packSink = got
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/msg")
		})
		b.Run("pack/"+size, func(b *testing.B) {
			b.SetBytes(int64(len(packed)))
			for b.Loop() {
				bytesSink = AppendPacked(nil, msgs)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/msg")
		})
	}
	packSink, bytesSink = nil, nil
}

// BenchmarkUnpackPaired reads the 100k conversation back by Unpack, by a
// Decoder over its rows and by the alloc floor (see BenchmarkUnpack) one
// after the other in every iteration, so that all three see the same
// load, and reports each one's median and the medians of the ratios
// taken in each iteration. Run:
//
//	go test ./history -run '^$' -bench UnpackPaired -benchtime 30x
func BenchmarkUnpackPaired(b *testing.B) {
	const n = 100000
	raws := benchRows(b, n)
	msgs := benchConversation(b, n)
	packed := AppendPacked(nil, msgs)
	rows, parts, usages := 0, 0, 0
	for i, raw := range raws {
		rows += len(raw)
		parts += len(msgs[i].Parts)
		if msgs[i].Usage != nil {
			usages++
		}
	}
	var unpack, decoder, alloc, overDecoder, overAlloc []time.Duration
	for b.Loop() {
		start := time.Now()
		got, err := Unpack(packed)
		if err != nil {
			b.Fatal(err)
		}
		packSink = got
		u := time.Since(start)

		start = time.Now()
		kept := make([]Message, n)
		var d Decoder
		left := rows
		for i, raw := range raws {
			m, err := d.Message(raw, left)
			if err != nil {
				b.Fatal(err)
			}
			left -= len(raw)
			kept[i] = m
		}
		packSink = kept
		dec := time.Since(start)

		start = time.Now()
		got, all, us := make([]Message, n), make([]Part, parts), make([]Usage, usages)
		for i := range got {
			k := len(msgs[i].Parts)
			got[i].Parts, all = all[:k:k], all[k:]
			if msgs[i].Usage != nil {
				got[i].Usage, us = &us[0], us[1:]
			}
		}
		packSink = got
		a := time.Since(start)

		unpack, decoder, alloc = append(unpack, u), append(decoder, dec), append(alloc, a)
		// ratios kept as durations of a thousandth each, for medianMs
		overDecoder = append(overDecoder, time.Duration(float64(time.Millisecond)*float64(dec)/float64(u)))
		overAlloc = append(overAlloc, time.Duration(float64(time.Millisecond)*float64(u)/float64(a)))
	}
	packSink = nil
	b.ReportMetric(medianMs(unpack), "unpack-ms")
	b.ReportMetric(medianMs(decoder), "decoder-ms")
	b.ReportMetric(medianMs(alloc), "alloc-ms")
	b.ReportMetric(medianMs(overDecoder), "x-decoder/unpack")
	b.ReportMetric(medianMs(overAlloc), "x-unpack/alloc")
}
