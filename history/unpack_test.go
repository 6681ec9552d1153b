package history

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// unpack is unpackRoom with no room: the tests' and benchmarks' way to
// unpack on a given number of goroutines.
func unpack(data []byte, workers, least int) ([]Message, error) {
	return unpackRoom(data, workers, least, 0)
}

// indexed is a conversation of n messages whose messages differ in parts
// and usage (so that every chunk has its own counts), packed in chunks of
// chunk, and where each message starts in the packed bytes, with the parts
// and usages before it (n+1 places: the last is the end).
func indexed(t *testing.T, n, chunk int) (msgs []Message, packed []byte, starts [][3]uint64) {
	t.Helper()
	msgs = benchConversation(t, n)
	for i := 0; i < n; i += 3 {
		msgs[i].Usage = nil
		msgs[i].Parts = append(msgs[i].Parts, Part{Type: TextPart, Text: fmt.Sprint(i)})
	}
	packed = appendPacked(nil, msgs, chunk)
	size := 0
	for i := range msgs {
		size += len(appendMessage(nil, &msgs[i]))
	}
	at, parts, usages := uint64(len(packed)-size), uint64(0), uint64(0)
	for i := range msgs {
		starts = append(starts, [3]uint64{at, parts, usages})
		at += uint64(len(appendMessage(nil, &msgs[i])))
		parts += uint64(len(msgs[i].Parts))
		if msgs[i].Usage != nil {
			usages++
		}
	}
	starts = append(starts, [3]uint64{at, parts, usages})
	// the index as written: each chunk's start
	index := packed[int(starts[0][0])-indexEntry*((n-1)/chunk):]
	for c := 1; c*chunk < n; c++ {
		e := index[(c-1)*indexEntry:]
		got := [3]uint64{binary.LittleEndian.Uint64(e), binary.LittleEndian.Uint64(e[8:]), binary.LittleEndian.Uint64(e[16:])}
		if got != starts[c*chunk] {
			t.Fatalf("chunk %d's entry is %v; message %d starts at %v", c, got, c*chunk, starts[c*chunk])
		}
	}
	return msgs, packed, starts
}

// A pack of the last version (1: no chunks, no index) is refused with
// ErrPackVersion, which the agent takes as a mark to read past (it reads
// the rows, and packs them again).
func TestAPackOfVersion1IsRefusedAsAnotherVersions(t *testing.T) {
	msgs := benchConversation(t, 10)
	v2 := appendPacked(nil, msgs, len(msgs)) // one chunk: no index
	// version 1: the same without the chunk's count
	i := 1
	for range 3 {
		_, k := binary.Uvarint(v2[i:])
		i += k
	}
	_, k := binary.Uvarint(v2[i:])
	v1 := append(append([]byte{1}, v2[1:i]...), v2[i+k:]...)
	if _, err := Unpack(v1); !errors.Is(err, ErrPackVersion) {
		t.Fatalf("a pack of version 1 unpacked with error %v; want one wrapping ErrPackVersion", err)
	}
	if got, err := Unpack(v2); err != nil || !reflect.DeepEqual(got, msgs) {
		t.Fatalf("the same messages of version 2 did not unpack: %v", err)
	}
}

// An index entry that is out of range, out of order, or not where its
// chunk starts (a byte inside a message, another message's start, counts
// of parts or usages that disagree) is refused, with the same error on
// one goroutine or several, never a panic or another message.
func TestUnpackRefusesAnIndexThatDoesNotLeadToEachChunk(t *testing.T) {
	const n, chunk = 30, 4
	_, packed, starts := indexed(t, n, chunk)
	index := int(starts[0][0]) - indexEntry*((n-1)/chunk)
	tried := 0
	for c := 1; c*chunk < n; c++ {
		was := starts[c*chunk]
		var bad [][3]uint64
		for f := range 3 {
			for _, v := range []uint64{was[f] - 1, was[f] + 1, 0, uint64(len(packed)), uint64(len(packed)) + 1, 1 << 63, ^uint64(0)} {
				e := was
				e[f] = v
				bad = append(bad, e)
			}
		}
		// each field of the message before or after, and all three of it
		for _, i := range []int{c*chunk - 1, c*chunk + 1} {
			bad = append(bad, starts[i])
			for f := range 3 {
				e := was
				e[f] = starts[i][f]
				bad = append(bad, e)
			}
		}
		for _, e := range bad {
			if e == was {
				continue
			}
			data := append([]byte(nil), packed...)
			at := data[index+(c-1)*indexEntry:]
			binary.LittleEndian.PutUint64(at, e[0])
			binary.LittleEndian.PutUint64(at[8:], e[1])
			binary.LittleEndian.PutUint64(at[16:], e[2])
			tried++
			var first error
			for _, workers := range []int{1, 2, 3, 8} {
				msgs, err := unpack(data, workers, 0)
				if err == nil {
					t.Fatalf("chunk %d's entry %v (it starts at %v) unpacked on %d goroutines without an error, to %d messages", c, e, was, workers, len(msgs))
				}
				if first == nil {
					first = err
				} else if err.Error() != first.Error() {
					t.Fatalf("chunk %d's entry %v: on %d goroutines %q, on one %q", c, e, workers, err, first)
				}
				if !strings.Contains(err.Error(), "packed messages") {
					t.Fatalf("the error %q does not say what it was unpacking", err)
				}
			}
		}
	}
	if tried < 100 {
		t.Fatalf("only %d entries tried", tried)
	}
}

// With several chunks damaged, the error is the first one's in the bytes'
// order, on any number of goroutines, however they take the chunks.
func TestUnpackOnSeveralGoroutinesGivesTheFirstErrorInTheBytes(t *testing.T) {
	const n, chunk = 64, 2
	_, packed, starts := indexed(t, n, chunk)
	every := func(from int) []int {
		var cs []int
		for c := from; c < n/chunk; c++ {
			cs = append(cs, c)
		}
		return cs
	}
	// every chunk from one on damaged: each goroutine fails at its first
	for _, damaged := range [][]int{{5}, {5, 20}, {20, 5, 31}, {0, 31}, {31}, every(0), every(1), every(7)} {
		data := append([]byte(nil), packed...)
		for _, c := range damaged {
			data[starts[c*chunk][0]] = 0x80 // message flags no message has
		}
		first := slicesMin(damaged)
		want := fmt.Sprintf("message flags 0x80 at byte %d", starts[first*chunk][0])
		for _, workers := range []int{1, 2, 4} {
			for range 20 {
				if _, err := unpack(data, workers, 0); err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("chunks %v damaged, unpacked on %d goroutines: %v; want %q", damaged, workers, err, want)
				}
			}
		}
	}
}

// Bytes between one chunk's last message and the next chunk's start
// (the index pointing past them) are refused, as bytes after the last
// message are.
func TestUnpackRefusesBytesBetweenChunks(t *testing.T) {
	const n, chunk = 30, 4
	_, packed, starts := indexed(t, n, chunk)
	index := int(starts[0][0]) - indexEntry*((n-1)/chunk)
	for c := 1; c*chunk < n; c++ {
		at := starts[c*chunk][0]
		// a message flag byte and a role byte: nothing a message can be
		// without its time
		data := append(append(append([]byte(nil), packed[:at]...), 0, codeUser), packed[at:]...)
		for k := c; k*chunk < n; k++ {
			e := data[index+(k-1)*indexEntry:]
			binary.LittleEndian.PutUint64(e, binary.LittleEndian.Uint64(e)+2)
		}
		for _, workers := range []int{1, 3} {
			if msgs, err := unpack(data, workers, 0); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("chunk %d ending 2 bytes before byte %d", c-1, at+2)) {
				t.Fatalf("two bytes before chunk %d, unpacked on %d goroutines: %v (%d messages)", c, workers, err, len(msgs))
			}
		}
	}
}

// With every chunk damaged at its last message, so that goroutines fail
// at about the same time, the error is still the first chunk's.
func TestUnpackGivesTheFirstChunksErrorWhenAllFailTogether(t *testing.T) {
	const n, chunk = 16000, 2000
	_, packed, starts := indexed(t, n, chunk)
	for c := 1; c <= n/chunk; c++ {
		packed[starts[c*chunk-1][0]] = 0x80
	}
	want := fmt.Sprintf("message flags 0x80 at byte %d", starts[chunk-1][0])
	for _, workers := range []int{2, 4} {
		for range 30 {
			if _, err := unpack(packed, workers, 0); err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("every chunk damaged at its end, unpacked on %d goroutines: %v; want %q", workers, err, want)
			}
		}
	}
}

// Unpack leaves no goroutine behind, whether it succeeds or a chunk
// fails: the goroutines it started have all ended (within a moment of
// its return: their last step, after the one Unpack waits on, is their
// return).
func TestUnpackLeavesNoGoroutineBehind(t *testing.T) {
	const n, chunk = 4000, 100
	_, packed, starts := indexed(t, n, chunk)
	damaged := append([]byte(nil), packed...)
	damaged[starts[n/2][0]] = 0x80
	before := runtime.NumGoroutine()
	for range 20 {
		if _, err := unpack(packed, 4, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := unpack(damaged, 4, 0); err == nil {
			t.Fatal("a damaged pack unpacked")
		}
	}
	for wait := time.Millisecond; runtime.NumGoroutine() > before; wait *= 2 {
		if wait > 2*time.Second {
			t.Fatalf("%d goroutines after unpacking, %d before", runtime.NumGoroutine(), before)
		}
		time.Sleep(wait)
	}
}

func slicesMin(v []int) int {
	m := v[0]
	for _, x := range v {
		m = min(m, x)
	}
	return m
}

// A pack of many chunks unpacks by Unpack (on this process's GOMAXPROCS)
// to the messages packed, as a pack of one chunk on one goroutine does.
func TestALargePackUnpacksAsItWasPacked(t *testing.T) {
	msgs, packed, _ := indexed(t, 3*unpackSerialBelow, 512)
	got, err := Unpack(packed)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, msgs) {
		t.Fatalf("%d messages: %s", len(msgs), firstDiff(reflect.ValueOf(got), reflect.ValueOf(msgs), "msgs"))
	}
	for _, workers := range []int{2, 3, maxUnpackers} {
		got, err := unpack(packed, workers, 0)
		if err != nil || !reflect.DeepEqual(got, msgs) {
			t.Fatalf("on %d goroutines: %v", workers, err)
		}
	}
}

// Unpack decodes on every P, and on no more than four goroutines: on 1
// P on the caller's goroutine alone.
func TestUnpackDecodesOnEveryPUpToFour(t *testing.T) {
	for procs, want := range map[int]int{1: 1, 2: 2, 3: 3, 4: 4, 5: 4, 64: 4} {
		if got := unpackers(procs); got != want {
			t.Errorf("with %d Ps an Unpack decodes on %d goroutines; want %d", procs, got, want)
		}
	}
}

// fitsUnderGoal says no for more than the heap goal, and yes for nothing
// more in a process whose heap is under its goal (a test's, just after
// a cycle).
func TestFitsUnderGoalComparesWithTheCollectorsGoal(t *testing.T) {
	runtime.GC()
	if !fitsUnderGoal(0) {
		t.Error("no byte more does not fit under the goal just after a cycle")
	}
	if fitsUnderGoal(1 << 50) {
		t.Error("a petabyte more fits under the goal")
	}
}

// An unpack whose arrays do not fit under the heap goal decodes on one
// goroutine fewer (with 2, on the caller's alone), and asks about the
// three arrays' bytes; one that fits, on as many as it was given; a
// serial one, or one too small to share out, does not ask.
func TestAnUnpackPastTheHeapGoalLeavesAPToTheCollector(t *testing.T) {
	defer func(f func(uint64) bool) { fitsUnderGoal = f }(fitsUnderGoal)
	var asked []uint64
	fits := false
	fitsUnderGoal = func(n uint64) bool { asked = append(asked, n); return fits }
	for _, c := range []struct {
		workers int
		fits    bool
		want    int
	}{{2, false, 1}, {4, false, 3}, {2, true, 2}, {4, true, 4}, {1, false, 1}} {
		fits = c.fits
		if got := decoders(c.workers, 1); got != c.want {
			t.Errorf("%d workers, fitting %v: %d decode; want %d", c.workers, c.fits, got, c.want)
		}
	}
	msgs := make([]Message, 3000)
	for i := range msgs {
		msgs[i] = Message{Role: User, Parts: []Part{{Type: TextPart, Text: "t"}}}
	}
	packed := AppendPacked(nil, msgs)
	asked = nil
	got, err := unpack(packed, 2, 0)
	if err != nil || len(got) != len(msgs) {
		t.Fatalf("unpacked %d messages, %v", len(got), err)
	}
	want := uint64(len(msgs))*uint64(unsafe.Sizeof(Message{})) + uint64(len(msgs))*uint64(unsafe.Sizeof(Part{}))
	if len(asked) != 1 || asked[0] != want {
		t.Errorf("asked whether %v bytes fit; want once, %d (the three arrays)", asked, want)
	}
	asked = nil
	if _, err := unpack(packed, 1, 0); err != nil || len(asked) != 0 {
		t.Errorf("a serial unpack asked %v (%v); want nothing asked", asked, err)
	}
	if _, err := unpack(packed, 2, len(msgs)*3); err != nil || len(asked) != 0 {
		t.Errorf("an unpack too small to share out asked %v (%v); want nothing asked", asked, err)
	}
}

// UnpackWithRoom's list is Unpack's with room for as many more messages
// as asked, on one goroutine or several, and a list of none has none.
func TestUnpackWithRoomLeavesTheRoomAsked(t *testing.T) {
	msgs := make([]Message, 3000)
	for i := range msgs {
		msgs[i] = Message{Role: User, Parts: []Part{{Type: TextPart, Text: fmt.Sprint("t", i)}}}
	}
	packed := AppendPacked(nil, msgs)
	for _, workers := range []int{1, 2} {
		got, err := unpackRoom(packed, workers, 0, 100)
		if err != nil || !reflect.DeepEqual(got, msgs) || cap(got) != len(msgs)+100 {
			t.Errorf("on %d goroutines: %d messages, cap %d, %v; want the %d packed with room for 100", workers, len(got), cap(got), err, len(msgs))
		}
	}
	if got, err := UnpackWithRoom(packed, -1); err != nil || cap(got) != len(msgs) {
		t.Errorf("a negative room: cap %d, %v; want %d", cap(got), err, len(msgs))
	}
	if _, err := UnpackWithRoom(packed, math.MaxInt); err == nil || !strings.Contains(err.Error(), "more than a list can hold") {
		t.Errorf("room for MaxInt more: %v; want an error, not a panic", err)
	}
}
