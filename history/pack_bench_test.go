package history

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/myelin-run/myelin/internal/hugepage"
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

// BenchmarkUnpackChunks unpacks conversations of 1k to 100k messages
// (BenchmarkUnpack's, ~1.5 parts a message), packed in chunks of 256 to
// 4096 messages, on one goroutine and on GOMAXPROCS (at most
// maxUnpackers) one after the other in every iteration, in this process:
// each unpack's arrays in pages an earlier one used (a running process's
// unpack, which the collector's pacing moves by 2×). It reports each
// one's median and the median of the ratio one over many taken in each
// iteration. BenchmarkUnpackFresh is a resume's unpack. Run:
//
//	go test ./history -run '^$' -bench UnpackChunks -benchtime 20x
func BenchmarkUnpackChunks(b *testing.B) {
	workers := min(runtime.GOMAXPROCS(0), maxUnpackers)
	for _, c := range []struct{ n, chunk int }{
		{1000, 256}, {2000, 256}, {4000, 256}, {10000, 256}, {10000, 512}, {10000, 1024},
		{100000, 256}, {100000, 512}, {100000, 1024}, {100000, 4096},
	} {
		packed := appendPacked(nil, benchConversation(b, c.n), c.chunk)
		b.Run(fmt.Sprintf("%dk/chunk-%d", c.n/1000, c.chunk), func(b *testing.B) {
			var one, many, ratio []time.Duration
			timed := func(w int) time.Duration {
				start := time.Now()
				got, err := unpack(packed, w, 0)
				if err != nil {
					b.Fatal(err)
				}
				packSink = got
				return time.Since(start)
			}
			for b.Loop() {
				o, m := timed(1), timed(workers)
				one, many = append(one, o), append(many, m)
				ratio = append(ratio, time.Duration(float64(time.Microsecond)*float64(o)/float64(m)))
			}
			packSink = nil
			b.ReportMetric(medianUs(one), "one-us")
			b.ReportMetric(medianUs(many), "many-us")
			b.ReportMetric(medianUs(ratio), "x-one/many")
		})
	}
}

// BenchmarkUnpackFresh is a resume's unpack: each in a fresh process (this
// test binary again), the first thing it allocates, so that the pages of
// the messages, parts and usages it makes are new to the process and
// their first touch — page faults, the most of a resume's unpack — falls
// in the decoding, as at a fresh `myelin run`'s; the collector on, as
// there. Each iteration runs one child on one goroutine and one on
// GOMAXPROCS (at most maxUnpackers), in turns going first, and the
// benchmark reports each one's median time and CPU time (the child's
// user and system, every thread), the median of the ratio one over many
// taken in each iteration, and the minor page faults of a many; and a
// third child, a many whose arrays are made in huge pages (as at the start
// of `myelin run`: internal/hugepage), with its time, CPU, faults and the
// median of many over it. Run:
//
//	go test ./history -run '^$' -bench UnpackFresh -benchtime 10x
func BenchmarkUnpackFresh(b *testing.B) {
	if path := os.Getenv("MYELIN_UNPACK_FRESH"); path != "" {
		freshChild(b, path)
		return
	}
	workers := min(runtime.GOMAXPROCS(0), maxUnpackers)
	for _, c := range []struct{ n, chunk int }{
		{1000, 256}, {2000, 256}, {4000, 256}, {10000, 256}, {10000, 512}, {10000, 1024},
		{100000, 256}, {100000, 512}, {100000, 1024}, {100000, 4096},
	} {
		path := filepath.Join(b.TempDir(), "packed")
		if err := os.WriteFile(path, appendPacked(nil, benchConversation(b, c.n), c.chunk), 0o600); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("%dk/chunk-%d", c.n/1000, c.chunk), func(b *testing.B) {
			var one, many, ratio, oneCPU, manyCPU, faults []time.Duration
			var huge, hugeCPU, hugeFaults, hugeRatio []time.Duration
			child := func(w int, advise bool) (wall, cpu, flt time.Duration) {
				cmd := exec.Command(os.Args[0], "-test.run", "^$", "-test.bench", "^BenchmarkUnpackFresh$", "-test.benchtime", "1x")
				cmd.Env = append(os.Environ(), "MYELIN_UNPACK_FRESH="+path, fmt.Sprintf("MYELIN_UNPACK_WORKERS=%d", w), fmt.Sprintf("MYELIN_UNPACK_HUGE=%v", advise))
				out, err := cmd.CombinedOutput()
				if err != nil {
					b.Fatalf("the child: %v\n%s", err, out)
				}
				_, rest, ok := strings.Cut(string(out), "unpacked:")
				if !ok {
					b.Fatalf("the child said no figures:\n%s", out)
				}
				if _, err := fmt.Sscan(rest, &wall, &cpu, &flt); err != nil {
					b.Fatalf("the child's figures %q: %v", rest, err)
				}
				return wall, cpu, flt
			}
			for n := 0; b.Loop(); n++ {
				var o, oc, m, mc, f, h, hc, hf time.Duration
				if n%2 == 0 {
					o, oc, _ = child(1, false)
					m, mc, f = child(workers, false)
					h, hc, hf = child(workers, true)
				} else {
					h, hc, hf = child(workers, true)
					m, mc, f = child(workers, false)
					o, oc, _ = child(1, false)
				}
				one, many, oneCPU, manyCPU, faults = append(one, o), append(many, m), append(oneCPU, oc), append(manyCPU, mc), append(faults, f)
				ratio = append(ratio, time.Duration(float64(time.Microsecond)*float64(o)/float64(m)))
				huge, hugeCPU, hugeFaults = append(huge, h), append(hugeCPU, hc), append(hugeFaults, hf)
				hugeRatio = append(hugeRatio, time.Duration(float64(time.Microsecond)*float64(m)/float64(h)))
			}
			b.ReportMetric(medianUs(one), "one-us")
			b.ReportMetric(medianUs(many), "many-us")
			b.ReportMetric(medianUs(ratio), "x-one/many")
			b.ReportMetric(medianUs(oneCPU), "one-cpu-us")
			b.ReportMetric(medianUs(manyCPU), "many-cpu-us")
			b.ReportMetric(medianUs(faults)*1000, "many-faults")
			b.ReportMetric(medianUs(huge), "huge-us")
			b.ReportMetric(medianUs(hugeCPU), "huge-cpu-us")
			b.ReportMetric(medianUs(hugeFaults)*1000, "huge-faults")
			b.ReportMetric(medianUs(hugeRatio), "x-many/huge")
		})
	}
}

// freshChild is BenchmarkUnpackFresh's child: it unpacks the bytes at path
// once, on the goroutines MYELIN_UNPACK_WORKERS says, its arrays in huge
// pages when MYELIN_UNPACK_HUGE is true, and prints the time, the
// process's CPU time and its minor page faults over the unpack.
func freshChild(b *testing.B, path string) {
	packed, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	workers, err := strconv.Atoi(os.Getenv("MYELIN_UNPACK_WORKERS"))
	if err != nil {
		b.Fatal(err)
	}
	if os.Getenv("MYELIN_UNPACK_HUGE") == "true" {
		hugepage.Allow()
	}
	var r0, r1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
	start := time.Now()
	got, err := unpack(packed, workers, 0)
	wall := time.Since(start)
	syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
	if err != nil {
		b.Fatal(err)
	}
	packSink = got
	cpu := r1.Utime.Nano() + r1.Stime.Nano() - r0.Utime.Nano() - r0.Stime.Nano()
	fmt.Printf("unpacked: %d %d %d\n", wall.Nanoseconds(), cpu, r1.Minflt-r0.Minflt)
	packSink = nil
}

// medianUs is the median of ds in microseconds.
func medianUs(ds []time.Duration) float64 {
	slices.Sort(ds)
	return float64(ds[len(ds)/2].Nanoseconds()) / 1000
}
