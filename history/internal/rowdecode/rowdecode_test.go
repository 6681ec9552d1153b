package rowdecode

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/internal/record"
)

// rows are n stored messages of conversation conv, numbered from 1, their
// checksums as a store keeps them.
func rows(t *testing.T, conv string, n int) []Row {
	t.Helper()
	out := make([]Row, n)
	for i := range out {
		m := history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: fmt.Sprintf("message %d: \"quoted\" é", i+1)}}}
		raw, err := history.EncodeMessage(m)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = Row{Seq: i + 1, Message: raw, CRC: record.MessageChecksum(conv, i+1, raw)}
	}
	return out
}

// waitGoroutines waits up to 5 s for the goroutines to fall to n.
func waitGoroutines(n int) int {
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	return runtime.NumGoroutine()
}

// Every row comes back decoded, in the order added, whether the read fits
// one batch (decoded on the caller's goroutine) or many (by the decoders).
func TestFinishGivesEveryRowDecodedInTheOrderAdded(t *testing.T) {
	for _, n := range []int{0, 1, Batch - 1, Batch, Batch + 1, 5*Batch + 17} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			in := rows(t, "c", n)
			b := Batches{Store: "s", Conv: "c", Last: n}
			for _, r := range in {
				b.Add(Row{Seq: r.Seq, Message: b.Copy(r.Message), CRC: r.CRC})
			}
			got, err := b.Finish([]history.Message{{Role: history.Context}})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != n+1 || got[0].Role != history.Context {
				t.Fatalf("%d messages after the one given, want %d", len(got)-1, n)
			}
			for i, r := range in {
				want, err := history.DecodeMessage(r.Message)
				if err != nil {
					t.Fatal(err)
				}
				if g := got[i+1]; g.Role != want.Role || len(g.Parts) != 1 || g.Parts[0].Text != want.Parts[0].Text {
					t.Fatalf("message %d decoded as %+v, want %+v", i+1, g, want)
				}
			}
		})
	}
}

// A row whose bytes do not match its checksum fails the read as damage,
// naming the store, the conversation and the message, in whichever batch
// it is.
func TestARowThatFailsItsChecksumFailsTheReadAsDamage(t *testing.T) {
	for _, bad := range []int{1, Batch + 3, 3 * Batch} {
		in := rows(t, "c", 3*Batch)
		in[bad-1].Message = append([]byte(nil), in[bad-1].Message...)
		in[bad-1].Message[len(in[bad-1].Message)-3] ^= 1
		b := Batches{Store: "h.db", Conv: "c", Last: len(in)}
		for _, r := range in {
			b.Add(r)
		}
		_, err := b.Finish(nil)
		if !errors.Is(err, history.ErrDamaged) {
			t.Fatalf("row %d damaged: %v, want ErrDamaged", bad, err)
		}
		if want := fmt.Sprintf("history store h.db: conversation c, message %d is damaged", bad); len(err.Error()) < len(want) || err.Error()[:len(want)] != want {
			t.Fatalf("row %d damaged: %q", bad, err)
		}
	}
}

// A read that gives up before Finish (its store failed, or it reads
// again) leaves no decoder running once it has called Stop, and Stop may
// be called again, or after Finish.
func TestStopEndsTheDecodersOfAReadThatGaveUp(t *testing.T) {
	before := runtime.NumGoroutine()
	in := rows(t, "c", 4*Batch)
	for range 3 {
		b := Batches{Store: "s", Conv: "c", Last: len(in)}
		for _, r := range in[:2*Batch+5] {
			b.Add(r)
		}
		b.Stop()
		b.Stop()
	}
	b := Batches{Store: "s", Conv: "c", Last: len(in)}
	for _, r := range in {
		b.Add(r)
	}
	if _, err := b.Finish(nil); err != nil {
		t.Fatal(err)
	}
	b.Stop()
	if n := waitGoroutines(before); n > before {
		t.Fatalf("%d goroutines after the reads, %d before", n, before)
	}
}

// What Copy gives is the caller's until the read ends: a later copy never
// writes over it, and a row larger than a quarter of an allocation is
// copied on its own.
func TestCopiesAreNotWrittenOverByLaterOnes(t *testing.T) {
	var b Batches
	src := []byte("first row")
	first := b.Copy(src)
	src[0] = 'X'
	var later [][]byte
	for i := range 2000 {
		later = append(later, b.Copy([]byte(fmt.Sprintf("row %d", i))))
	}
	big := b.Copy(make([]byte, rowBytes))
	if string(first) != "first row" {
		t.Fatalf("the first copy reads %q", first)
	}
	for i, c := range later {
		if string(c) != fmt.Sprintf("row %d", i) {
			t.Fatalf("copy %d reads %q", i, c)
		}
		if cap(c) != len(c) {
			t.Fatalf("copy %d has room to grow into the next (cap %d, len %d)", i, cap(c), len(c))
		}
	}
	if len(big) != rowBytes {
		t.Fatalf("a large row copied to %d bytes", len(big))
	}
}
