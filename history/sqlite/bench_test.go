package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/internal/record"
	"github.com/myelin-run/myelin/result"
)

// BenchmarkRoundCommit measures what keeping each finished call's result
// at once (Keep, not synced) adds to storing a round of 10 results, side by
// side in one run:
//
//   - fsync-floor: write 4 KiB to a file and fsync it — what one synced
//     commit cannot go below on this disk;
//   - results-only: the round's results in one synced Append (the path
//     before results were kept);
//   - kept-each-then-results: 10 Keeps of one result (calls finishing one
//     by one), then the same Append, which removes them;
//   - kept-at-once-then-results: one Keep of the 10 (calls finishing
//     together: the agent's keeper batches them), then the Append.
//
// Run:
//
//	go test ./history/sqlite -run '^$' -bench RoundCommit -count 6
func BenchmarkRoundCommit(b *testing.B) {
	const calls = 10
	results := history.Message{Role: history.User}
	for i := range calls {
		results.Parts = append(results.Parts, history.Part{Type: history.ToolResultPart, CallID: fmt.Sprintf("toolu_%d", i),
			Text: "     1\tpackage main\n     2\t\n     3\tfunc main() {}\n[lines 1-3 of 3 in src/main.go; end of file]"})
	}
	b.Run("fsync-floor", func(b *testing.B) {
		f, err := os.Create(filepath.Join(b.TempDir(), "f"))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		page := []byte(strings.Repeat("x", 4096))
		for b.Loop() {
			if _, err := f.WriteAt(page, 0); err != nil {
				b.Fatal(err)
			}
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, bc := range []struct {
		name  string
		batch int // results per Keep; 0: none kept
	}{{"results-only", 0}, {"kept-each-then-results", 1}, {"kept-at-once-then-results", calls}} {
		b.Run(bc.name, func(b *testing.B) {
			s, wctx := claimedStore(b)
			for b.Loop() {
				for i := 0; bc.batch > 0 && i < calls; i += bc.batch {
					if err := s.Keep(history.Lazy(wctx), "c", results.Parts[i:i+bc.batch]...); err != nil {
						b.Fatal(err)
					}
				}
				if err := s.Append(wctx, "c", results); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkChecksumBesideDecode measures what checking a stored message's
// checksum (layout 3) adds to reading it: messageChecksum and
// decodeMessage of the same stored row (an assistant message with a tool
// call, and a tool result, as in the agent's NextRequest benchmark), side
// by side in one run. Run:
//
//	go test ./history/sqlite -run '^$' -bench ChecksumBesideDecode -count 6
func BenchmarkChecksumBesideDecode(b *testing.B) {
	msgs := []history.Message{
		{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: "Let me read the next file."},
			{Type: history.ToolCallPart, CallID: "toolu_1", Name: "workspace--read", Input: []byte(`{"path":"src/main.go"}`)}}},
		{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: "toolu_1",
			Text: "     1\tpackage main\n     2\t\n     3\tfunc main() {}\n[lines 1-3 of 3 in src/main.go; end of file]"}}},
	}
	var rows [][]byte
	for _, m := range msgs {
		raw, err := result.JSON(m)
		if err != nil {
			b.Fatal(err)
		}
		rows = append(rows, raw)
	}
	b.Run("decode", func(b *testing.B) {
		for b.Loop() {
			for _, raw := range rows {
				if _, err := history.DecodeMessage(raw); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("checksum", func(b *testing.B) {
		var sum int64
		for b.Loop() {
			for i, raw := range rows {
				sum += record.MessageChecksum("0194f1c2-7a3b-7c4d-9e5f-0123456789ab", 10000+i, raw)
			}
		}
		_ = sum
	})
}

// BenchmarkAgentRound measures one light round stored as the agent stores
// it (issue 13, "The durable store per round" in docs/overhead.md),
// beside the floor it is held to, in one run:
//
//   - fsync-floor: 60 bytes written to a file in the store's directory and
//     fsynced — the one disk sync a round must pay;
//   - round: the answer asking for 10 calls, appended lazily (history.Lazy:
//     no sync), one Keep of the first finished result (lazy), then the 10
//     results appended synced — the agent's three transactions when 10
//     no-op calls finish at once;
//   - sqlite-floor: the least SQLite work contract §7 asks of the round
//     (sqliteFloor): three one-row commits, nothing else;
//   - round-and-read: the round, then the Messages that the agent's next
//     request reads the conversation with;
//   - journal-floor: what the same round would cost an append-only journal
//     at least (docs/overhead.md says why there is none):
//     the three records' JSON encoded and written to one file, each with
//     its own write, and one fsync after the last.
//
// Run:
//
//	go test ./history/sqlite -run '^$' -bench AgentRound -count 6
func BenchmarkAgentRound(b *testing.B) {
	answer, results := lightRound()
	b.Run("fsync-floor", func(b *testing.B) {
		f, err := os.Create(filepath.Join(b.TempDir(), "f"))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		record := []byte(strings.Repeat("x", 59) + "\n")
		for b.Loop() {
			if _, err := f.Write(record); err != nil {
				b.Fatal(err)
			}
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("journal-floor", func(b *testing.B) {
		f, err := os.Create(filepath.Join(b.TempDir(), "journal"))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		for b.Loop() {
			for _, v := range []any{answer, results.Parts[0], results} {
				raw, err := result.JSON(v)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := f.Write(append(raw, '\n')); err != nil {
					b.Fatal(err)
				}
			}
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sqlite-floor", func(b *testing.B) { sqliteFloor(b, answer, results) })
	for _, read := range []bool{false, true} {
		name := "round"
		if read {
			name = "round-and-read"
		}
		b.Run(name, func(b *testing.B) { storeRound(b, answer, results, read) })
	}
}

// storeRound is BenchmarkAgentRound's round through the store; with read,
// each round is followed by the Messages that the agent's next request
// reads the conversation with (the store has read it before the first).
func storeRound(b *testing.B, answer, results history.Message, read bool) {
	s, wctx := claimedStore(b)
	readAll := func() {
		if _, err := s.Messages(wctx, "c"); err != nil {
			b.Fatal(err)
		}
	}
	if read {
		readAll()
	}
	for b.Loop() {
		if err := oneRound(s, wctx, answer, results); err != nil {
			b.Fatal(err)
		}
		if read {
			readAll()
		}
	}
}

// lightRound is a light round: the answer asking for 10 calls, and their
// results.
func lightRound() (answer, results history.Message) {
	const calls = 10
	answer = history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: "Reading them all."}}}
	results = history.Message{Role: history.User}
	for i := range calls {
		id := fmt.Sprintf("toolu_%02d", i)
		answer.Parts = append(answer.Parts, history.Part{Type: history.ToolCallPart, CallID: id, Name: "noop", Input: []byte(`{"n":1}`)})
		results.Parts = append(results.Parts, history.Part{Type: history.ToolResultPart, CallID: id, Text: "ok"})
	}
	return answer, results
}

// oneRound stores a light round as the agent does when its 10 calls
// finish together: the answer appended lazily, the first result kept
// (lazily), the results appended synced.
func oneRound(s *Store, wctx context.Context, answer, results history.Message) error {
	if err := s.Append(history.Lazy(wctx), "c", answer); err != nil {
		return err
	}
	if err := s.Keep(history.Lazy(wctx), "c", results.Parts[0]); err != nil {
		return err
	}
	return s.Append(wctx, "c", results)
}

// sqliteFloor is the least SQLite work a light round needs under contract
// §7, with the store's driver, DSN pragmas, WAL mode and tables (schema),
// and nothing of the store: no claim, no checksum, no count, no JSON
// encoding (the rows' bytes are encoded once, before the loop), no
// database/sql transaction (BEGIN IMMEDIATE and COMMIT are statements
// prepared once). Each round commits, on one connection:
//
//   - the answer's row, lazily (synchronous=NORMAL): it must be in the
//     log before any call runs;
//   - one kept result's row, lazily: a call that finishes before the
//     others is kept at once;
//   - the results' row, synced (synchronous=FULL): on disk before they
//     are sent.
//
// The synchronous level is the connection's, so a round switches it twice
// (to NORMAL for the first lazy commit, back to FULL for the synced one),
// as the store did before issue 34 (it now commits at NORMAL and syncs the
// log itself: logsync.go).
func sqliteFloor(b *testing.B, answer, results history.Message) {
	round := newSQLiteFloor(b, filepath.Join(b.TempDir(), "floor.db"), answer, results)
	for b.Loop() {
		round()
	}
}

// newSQLiteFloor makes sqliteFloor's database at path and returns its
// round.
func newSQLiteFloor(b *testing.B, path string, answer, results history.Message) (round func()) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=foreign_keys(1)&_txlock=immediate")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1) // the synchronous level is the connection's, as in the store
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, schema+`INSERT INTO conversations (id, system, created, updated) VALUES ('c', '', '', '')`); err != nil {
		b.Fatal(err)
	}
	var raw [3][]byte // the answer, the kept result, the results
	for i, v := range []any{answer, results.Parts[0], results} {
		if raw[i], err = result.JSON(v); err != nil {
			b.Fatal(err)
		}
	}
	prepare := func(q string) *sql.Stmt {
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			b.Fatal(err)
		}
		return st
	}
	insert := prepare(`INSERT INTO messages (conversation, seq, message, crc) VALUES ('c', ?, ?, 0)`)
	keep := prepare(`INSERT OR REPLACE INTO kept (conversation, call_id, part) VALUES ('c', 'toolu_00', ?)`)
	exec := func(q string) {
		if _, err := db.ExecContext(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	commitRow := func(st *sql.Stmt, args ...any) {
		tx, err := db.BeginTx(ctx, nil)
		if err == nil {
			_, err = tx.StmtContext(ctx, st).ExecContext(ctx, args...)
		}
		if err == nil {
			err = tx.Commit()
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	seq := 0
	return func() {
		exec(`PRAGMA synchronous = NORMAL`)
		seq++
		commitRow(insert, seq, raw[0])
		commitRow(keep, raw[1])
		exec(`PRAGMA synchronous = FULL`)
		seq++
		commitRow(insert, seq, raw[2])
	}
}

// BenchmarkDurableRound measures the store's light round against the
// floors a durable round can be held to, side by side and paired: each
// iteration runs, in turn (each goes first in one iteration of six), one
// round of
//
//   - store: the round as the agent stores it (BenchmarkAgentRound's
//     round-and-read: the answer appended lazily, one Keep, the 10 results
//     appended synced, then the Messages of the next request, under the
//     writer's claim);
//   - fsync: 60 bytes appended to a file beside the store and fsynced (the
//     one disk sync a round must pay, as BenchmarkPerRoundOverhead's
//     floor does it: the file grows, so each sync also commits its size);
//   - fdatasync-in-place: 60 bytes written over the start of a file and
//     fdatasynced (nothing but the data to sync: what a log written in
//     place, as SQLite's is once it has filled, pays at least);
//   - log-frames: the bytes the store's round adds to its log (its
//     frames, measured as the log grows over the first rounds), written
//     in place as SQLite writes them — each frame's 24-byte header and its
//     page with a write each — then fdatasynced: the disk's share of the
//     store's round, without SQLite;
//   - log-frames-one-write: the same bytes in one write, fdatasynced: what
//     the log's writes would cost if a commit's frames went to the file
//     together;
//   - sqlite-floor: sqliteFloor's round (three one-row commits, one synced).
//
// It reports each one's median per round, the medians of each iteration's
// store / floor, the frames the store's round adds to its log and (Linux)
// the write system calls of the store's round (/proc/self/io) and the
// CPU time of the process during it, its mean (getrusage): on this
// shared VM the disk's sync time moves by 3× within a minute, and a paired
// ratio sees both sides of it in the same stretch (issue 34). Run:
//
//	go test ./history/sqlite -run '^$' -bench DurableRound -benchtime 2000x
func BenchmarkDurableRound(b *testing.B) {
	answer, results := lightRound()
	dir := b.TempDir()
	file := func(name string) *os.File {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { f.Close() })
		return f
	}
	appended, inPlace, framesFile, oneWrite := file("fsync-floor"), file("in-place"), file("frames"), file("frames-one-write")
	record := []byte(strings.Repeat("x", 59) + "\n")
	floor := newSQLiteFloor(b, filepath.Join(dir, "floor.db"), answer, results)
	s, wctx := claimedStore(b)
	if _, err := s.Messages(wctx, "c"); err != nil {
		b.Fatal(err)
	}
	storeRound := func() {
		if err := oneRound(s, wctx, answer, results); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Messages(wctx, "c"); err != nil {
			b.Fatal(err)
		}
	}
	// the frames a round adds to the log, over rounds before its first
	// checkpoint; those rounds also warm the store up
	frames := roundFrames(b, s, storeRound)
	log := newLogFloor(b, framesFile, frames)
	logOnce := newLogFloor(b, oneWrite, frames)
	var storeWrites []float64
	var storeCPU time.Duration
	runs := []func(){
		func() {
			before, cpu := writeCalls(), cpuTime()
			storeRound()
			if after := writeCalls(); before >= 0 && after >= 0 {
				storeWrites = append(storeWrites, float64(after-before))
			}
			storeCPU += cpuTime() - cpu
		},
		func() {
			if _, err := appended.Write(record); err != nil {
				b.Fatal(err)
			}
			if err := appended.Sync(); err != nil {
				b.Fatal(err)
			}
		},
		func() {
			if _, err := inPlace.WriteAt(record, 0); err != nil {
				b.Fatal(err)
			}
			if err := syncData(inPlace, inPlace.Fd()); err != nil {
				b.Fatal(err)
			}
		},
		func() { log.round(b, false) },
		func() { logOnce.round(b, true) },
		floor,
	}
	names := []string{"store", "fsync", "fdatasync-in-place", "log-frames", "log-frames-one-write", "sqlite-floor"}
	times := make([][]time.Duration, len(runs))
	over := make([][]float64, len(runs)) // store / each
	for i := 0; b.Loop(); i++ {
		took := make([]time.Duration, len(runs))
		for k := range runs {
			at := (k + i) % len(runs)
			start := time.Now()
			runs[at]()
			took[at] = time.Since(start)
		}
		for k, d := range took {
			times[k] = append(times[k], d)
			over[k] = append(over[k], float64(took[0])/float64(d))
		}
	}
	median := func(xs []float64) float64 {
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	for k, name := range names {
		ds := make([]float64, len(times[k]))
		for i, d := range times[k] {
			ds[i] = float64(d.Nanoseconds()) / 1e3
		}
		b.ReportMetric(median(ds), name+"-µs/round")
		if k > 0 {
			b.ReportMetric(median(over[k]), "x-"+name+"-paired")
		}
	}
	b.ReportMetric(float64(frames), "log-frames/round")
	if len(storeWrites) > 0 {
		b.ReportMetric(median(storeWrites), "store-write-calls/round")
	}
	if storeCPU > 0 {
		b.ReportMetric(float64(storeCPU.Microseconds())/float64(len(times[0])), "store-cpu-µs/round")
	}
}

// walFrame is the size of one frame of the store's log: a 24-byte header
// and a page (the store's pages are SQLite's default 4 KiB).
const walFrame = 24 + 4096

// roundFrames runs round until it knows how many frames one adds to the
// store's log (the log's growth over rounds that made no checkpoint, which
// starts the log over), and returns that, rounded up.
func roundFrames(b *testing.B, s *Store, round func()) int {
	size := func() int64 {
		fi, err := os.Stat(s.path + "-wal")
		if err != nil {
			b.Fatal(err)
		}
		return fi.Size()
	}
	const rounds = 20
	for try := 0; try < 10; try++ {
		before := size()
		for range rounds {
			round()
		}
		if grown := size() - before; grown > 0 && grown%walFrame == 0 {
			return int((grown/walFrame + rounds - 1) / rounds)
		}
	}
	b.Fatal("the store's log never grew by whole frames over a round (is its page not 4 KiB?)")
	return 0
}

// logFloor writes a round's frames into a file already as large as a
// full log (as SQLite's is once it has filled and started over), in place,
// and syncs them (logFloor.round).
type logFloor struct {
	f      *os.File
	frames int
	buf    []byte
	off    int64
}

// logFloorSize is the size of a full log: SQLite checkpoints it, and
// starts it over, once it holds 1000 pages (wal_autocheckpoint).
const logFloorSize = 1000 * walFrame

func newLogFloor(b *testing.B, f *os.File, frames int) *logFloor {
	full := make([]byte, logFloorSize)
	if _, err := f.WriteAt(full, 0); err != nil {
		b.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	return &logFloor{f: f, frames: frames, buf: make([]byte, frames*walFrame)}
}

// round writes the frames, each header and page with a write of its own
// as SQLite does or, with together, all in one write, and fdatasyncs them.
func (l *logFloor) round(b *testing.B, together bool) {
	if l.off+int64(len(l.buf)) > logFloorSize {
		l.off = 0
	}
	write := func(p []byte, at int64) {
		if _, err := l.f.WriteAt(p, at); err != nil {
			b.Fatal(err)
		}
	}
	if together {
		write(l.buf, l.off)
	} else {
		for i := range l.frames {
			at := int64(i * walFrame)
			write(l.buf[at:at+24], l.off+at)
			write(l.buf[at+24:at+walFrame], l.off+at+24)
		}
	}
	l.off += int64(len(l.buf))
	if err := syncData(l.f, l.f.Fd()); err != nil {
		b.Fatal(err)
	}
}

// claimedStore is a new store holding conversation "c", with a context
// that writes to it under its claim; the store closes when b ends.
func claimedStore(b *testing.B) (*Store, context.Context) {
	s, err := Open(filepath.Join(b.TempDir(), "h.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	ctx := context.Background()
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		b.Fatal(err)
	}
	h, err := s.Claim(ctx, "c", history.NewHolder(), history.DefaultLease)
	if err != nil {
		b.Fatal(err)
	}
	return s, history.Writing(ctx, h)
}
