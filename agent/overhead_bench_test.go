package agent

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/sqlite"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/workspace"
)

// The shape of the work issue 13 measures: one agent turn of overheadRounds
// rounds of overheadCalls calls of a tool that does nothing.
const (
	overheadRounds = 20
	overheadCalls  = 10
	heavySize      = 50 << 10 // a heavy round's result, per call
)

// heavyOutput is what the heavy tool returns: 50 KiB of lines. The heavy
// floor sends it whole for every result (a raw client has no spill).
var heavyOutput = strings.Repeat("heavy output line of the benchmark\n", heavySize/35+1)[:heavySize]

// BenchmarkPerRoundOverhead measures what one tool round costs through the
// agent against a raw floor, side by side in one run: each iteration runs
// one agent turn of 20 rounds of 10 no-op calls against the wire's scripted
// fake over loopback (stream on) and, before or after it (they take
// turns), a minimal net/http client that
// posts the same request bodies to the same fake (replayed from a first
// recorded agent run, headers and all; on Bedrock signed again, as any
// Bedrock client signs each request) and reads each streamed answer to
// its end, then 20 Write+Sync of a small record to a file on the same
// disk, then (durable store) 20 rounds of the SQLite floor. It reports the
// medians per round and the ratios:
//
//   - x-raw: agent / raw floor, the ratio of the two medians;
//   - x-raw-paired: the median of each iteration's agent / raw floor.
//     The two runs of an iteration are a few milliseconds apart (they
//     take turns going first), so a slower stretch of the machine —
//     on this VM the floor's own median moves by a fifth between runs —
//     slows both; this is the ratio the goal is read by;
//   - x-raw+fsync (durable store only): agent / (raw floor + one fsync);
//   - sqlite-floor-µs/round and x-raw+sqlite-floor (durable store only):
//     the least SQLite work a round needs (sqliteFloor: three one-row
//     commits, one synced), and agent / (raw floor + that);
//   - raw-fsyncing-µs/round, x-raw-fsyncing-paired, raw-sqlite-floor-µs/round
//     and x-raw-sqlite-floor-paired (durable store only): the raw floor
//     doing the fsync, or the SQLite floor's round, after each round's
//     answer — a raw client that persists its rounds, the durable work
//     interleaved with the exchanges as the agent's is, not timed apart
//     on a quiet process — and the paired ratios of the agent to it.
//
// Cases: every wire × the in-memory store (history.Memory) and the
// default durable SQLite store; heavy rounds (50 KiB results, which the
// agent spills and the raw floor sends whole) on Anthropic, named
// anthropic-heavy/<store>. No assertion
// is timed. Run (docs/overhead.md has the table):
//
//	go test ./agent -run '^$' -bench PerRoundOverhead -benchtime 21x
func BenchmarkPerRoundOverhead(b *testing.B) {
	type bench struct {
		wire, store string
		heavy       bool
	}
	var cases []bench
	for _, w := range wires() {
		cases = append(cases, bench{w, "memory", false}, bench{w, "sqlite", false})
	}
	cases = append(cases, bench{"anthropic", "memory", true}, bench{"anthropic", "sqlite", true})
	for _, bc := range cases {
		name := bc.wire
		if bc.heavy {
			name += "-heavy"
		}
		name += "/" + bc.store
		b.Run(name, func(b *testing.B) { overheadCase(b, bc.wire, bc.store, bc.heavy) })
	}
}

// overheadScript is the fake's answers to one turn: the rounds of calls,
// then text. On Gemini each answer carries the same fixed signature, so
// that the bodies the floor replays still carry the ones the fake issued.
func overheadScript() []providertest.Step {
	steps := make([]providertest.Step, 0, overheadRounds+1)
	for r := 0; r < overheadRounds; r++ {
		calls := make([]providertest.ToolCall, overheadCalls)
		for k := range calls {
			calls[k] = providertest.ToolCall{ID: fmt.Sprintf("call_%d_%d", r, k), Name: "noop--run", Input: `{}`}
		}
		steps = append(steps, providertest.Step{ToolCalls: calls, GeminiSignature: "c2lnbmF0dXJl"})
	}
	return append(steps, providertest.Step{Text: "done"})
}

func overheadCase(b *testing.B, wire, storeKind string, heavy bool) {
	w := testWires[wire]
	srv := w.server(b)
	dir := b.TempDir()
	ws, err := workspace.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ws.Close() })
	var store history.Store = &history.Memory{}
	if storeKind == "sqlite" {
		s, err := sqlite.Open(filepath.Join(dir, ".myelin", "history.db"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		store = s
	}
	noop := tool.MustFunc("noop--run", "Does nothing.", func(ctx context.Context, _ struct{}) (any, error) {
		if heavy {
			return heavyOutput, nil
		}
		return "ok", nil
	})
	noop.ReadOnly = true // it changes nothing: the round's calls run side by side
	reg := &tool.Registry{}
	if err := reg.Add(noop); err != nil {
		b.Fatal(err)
	}
	newAgent := func(url string) *Agent {
		p, err := w.provider(url)
		if err != nil {
			b.Fatal(err)
		}
		return &Agent{Provider: p, Store: store, Tools: reg, Env: result.Env{Store: ws}, Model: w.model}
	}
	ctx := context.Background()
	turn := func(a *Agent) time.Duration {
		id, err := a.NewConversation(ctx)
		if err != nil {
			b.Fatal(err)
		}
		srv.Push(overheadScript()...)
		start := time.Now()
		tr, err := a.Turn(ctx, id, "go", nil)
		d := time.Since(start)
		if err != nil || tr.Rounds != overheadRounds || tr.Text != "done" {
			b.Fatalf("%s: turn %+v, %v", wire, tr, err)
		}
		return d
	}

	// The first run goes through a recorder, which keeps each request as
	// it was sent for the floor to replay.
	rec := newRecorder(b, srv.URL)
	turn(newAgent(rec.url))
	exchanges := rec.exchanges
	if heavy {
		whole := 0
		for i := range exchanges {
			var n int
			exchanges[i].body, n = unspilled(b, exchanges[i].body)
			whole += n
		}
		// every round's results in every later request: 10 × (1+…+20)
		if want := overheadCalls * overheadRounds * (overheadRounds + 1) / 2; whole != want {
			b.Fatalf("the floor's bodies carry %d whole results, want %d", whole, want)
		}
		b.ReportMetric(float64(whole), "whole-results")
	}
	floor := &rawFloor{client: &http.Client{Transport: &http.Transport{}}, base: rec.target, exchanges: exchanges, sign: w.sign}
	defer floor.client.CloseIdleConnections()
	syncFile, err := os.Create(filepath.Join(dir, "fsync-floor"))
	if err != nil {
		b.Fatal(err)
	}
	defer syncFile.Close()

	var sqlFloor *sqliteFloor
	if storeKind == "sqlite" {
		sqlFloor = newSQLiteFloor(b, filepath.Join(dir, "sqlite-floor.db"), store)
	}

	a := newAgent(srv.URL)
	// Each iteration's runs: the agent's turn, the raw floor, and with
	// the durable store the raw floor doing the durable floor's work
	// after each round's answer (an fsync; the SQLite floor's round),
	// as a raw client that persisted its rounds would.
	runs := []func() time.Duration{
		func() time.Duration { return turn(a) },
		func() time.Duration { srv.Push(overheadScript()...); return floor.run(b, nil) },
	}
	if sqlFloor != nil {
		runs = append(runs,
			func() time.Duration {
				srv.Push(overheadScript()...)
				return floor.run(b, func() { fsyncOnce(b, syncFile) })
			},
			func() time.Duration { srv.Push(overheadScript()...); return floor.run(b, func() { sqlFloor.round(b) }) })
	}
	times := make([][]time.Duration, len(runs))
	paired := make([][]float64, len(runs)) // each iteration's agent / that run
	var syncT, sqlT []time.Duration
	for i := 0; b.Loop(); i++ {
		// The agent and the floors take turns going first, so that none
		// always runs on another's leftovers (a collected heap, a cold
		// cache).
		took := make([]time.Duration, len(runs))
		for k := range runs {
			at := k
			if i%2 == 1 {
				at = (k + 1) % len(runs) // the agent last
			}
			took[at] = runs[at]()
		}
		srv.Forget() // the fake keeps no bodies the run does not read
		for k, d := range took {
			times[k] = append(times[k], d)
			paired[k] = append(paired[k], float64(took[0])/float64(d))
		}
		syncT = append(syncT, fsyncRounds(b, syncFile))
		if sqlFloor != nil {
			sqlT = append(sqlT, sqlFloor.run(b))
		}
	}
	perRound := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)/2].Nanoseconds()) / 1e3 / overheadRounds
	}
	median := func(xs []float64) float64 {
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	ag, raw, fs := perRound(times[0]), perRound(times[1]), perRound(syncT)
	b.ReportMetric(ag, "agent-µs/round")
	b.ReportMetric(raw, "raw-µs/round")
	b.ReportMetric(ag/raw, "x-raw")
	b.ReportMetric(median(paired[1]), "x-raw-paired")
	if storeKind == "sqlite" {
		b.ReportMetric(fs, "fsync-µs/round")
		b.ReportMetric(ag/(raw+fs), "x-raw+fsync")
		sf := perRound(sqlT)
		b.ReportMetric(sf, "sqlite-floor-µs/round")
		b.ReportMetric(ag/(raw+sf), "x-raw+sqlite-floor")
		b.ReportMetric(perRound(times[2]), "raw-fsyncing-µs/round")
		b.ReportMetric(median(paired[2]), "x-raw-fsyncing-paired")
		b.ReportMetric(perRound(times[3]), "raw-sqlite-floor-µs/round")
		b.ReportMetric(median(paired[3]), "x-raw-sqlite-floor-paired")
	}
}

// sqliteFloor is the durable floor's SQLite form: the least SQLite work a
// light round needs under contract §7 (history's BenchmarkAgentRound has
// the same floor beside the store's own round), on a file of its own in
// the store's directory, with the store's driver, pragmas and way of
// writing (one connection, a database/sql transaction per commit that
// takes the write lock as it begins): per round, the answer's row
// committed lazily (synchronous=NORMAL), one kept result's row lazily, the
// results' row synced (FULL), every statement prepared once, the rows'
// bytes those the agent's first turn stored. (A floor written on a held
// connection with BEGIN and COMMIT prepared uses less CPU but took more
// wall time per round in alternated runs, so it is not the floor.)
type sqliteFloor struct {
	db    *sql.DB
	steps []*sql.Stmt
	rows  [3][]byte // the answer, one result, the results
	seq   int
}

func newSQLiteFloor(b *testing.B, path string, store history.Store) *sqliteFloor {
	ctx := context.Background()
	f := &sqliteFloor{}
	// the rows: a round's answer and results as the first turn stored them
	list, err := store.List(ctx)
	if err != nil || len(list) == 0 {
		b.Fatalf("the SQLite floor found no conversation to size its rows by: %v", err)
	}
	msgs, err := store.Messages(ctx, list[0].ID)
	if err != nil || len(msgs) < 3 {
		b.Fatalf("the SQLite floor's rows: %d messages, %v", len(msgs), err)
	}
	for i, v := range []any{msgs[1], msgs[2].Parts[0], msgs[2]} {
		if f.rows[i], err = result.JSON(v); err != nil {
			b.Fatal(err)
		}
	}
	if f.db, err = sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=foreign_keys(1)&_txlock=immediate"); err != nil {
		b.Fatal(err)
	}
	f.db.SetMaxOpenConns(1) // the synchronous level is the connection's, as in the store
	b.Cleanup(func() { f.db.Close() })
	// the store's tables, as far as the floor writes them
	if _, err := f.db.ExecContext(ctx, `CREATE TABLE conversations (id TEXT PRIMARY KEY);
		CREATE TABLE messages (conversation TEXT NOT NULL REFERENCES conversations(id), seq INTEGER NOT NULL,
			message BLOB NOT NULL, crc INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (conversation, seq));
		CREATE TABLE kept (conversation TEXT NOT NULL REFERENCES conversations(id), call_id TEXT NOT NULL,
			part BLOB NOT NULL, PRIMARY KEY (conversation, call_id)) WITHOUT ROWID;
		INSERT INTO conversations VALUES ('c')`); err != nil {
		b.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO messages (conversation, seq, message) VALUES ('c', ?, ?)`,
		`INSERT OR REPLACE INTO kept (conversation, call_id, part) VALUES ('c', 'k', ?)`} {
		st, err := f.db.PrepareContext(ctx, q)
		if err != nil {
			b.Fatal(err)
		}
		f.steps = append(f.steps, st)
	}
	return f
}

// run is overheadRounds rounds of the floor.
func (f *sqliteFloor) run(b *testing.B) time.Duration {
	start := time.Now()
	for r := 0; r < overheadRounds; r++ {
		f.round(b)
	}
	return time.Since(start)
}

// round is one round of the floor: the answer's row and a kept result's
// committed lazily, the results' row synced.
func (f *sqliteFloor) round(b *testing.B) {
	ctx := context.Background()
	insert, keep := f.steps[0], f.steps[1]
	exec := func(q string) {
		if _, err := f.db.ExecContext(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	commitRow := func(st *sql.Stmt, args ...any) {
		tx, err := f.db.BeginTx(ctx, nil)
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
	exec(`PRAGMA synchronous = NORMAL`)
	f.seq++
	commitRow(insert, f.seq, f.rows[0])
	commitRow(keep, f.rows[1])
	exec(`PRAGMA synchronous = FULL`)
	f.seq++
	commitRow(insert, f.seq, f.rows[2])
}

// exchange is one request as the agent's provider sent it.
type exchange struct {
	method, uri string
	header      http.Header
	body        []byte
}

// recorder is a loopback proxy in front of the fake that keeps each
// request the agent sends; only the first, untimed run goes through it.
type recorder struct {
	url       string   // what to point the provider at: the fake's URL, through the proxy
	target    *url.URL // the fake's scheme and host
	mu        sync.Mutex
	exchanges []exchange
}

func newRecorder(b *testing.B, fakeURL string) *recorder {
	u, err := url.Parse(fakeURL)
	if err != nil {
		b.Fatal(err)
	}
	rec := &recorder{target: &url.URL{Scheme: u.Scheme, Host: u.Host}}
	proxy := httputil.NewSingleHostReverseProxy(rec.target)
	proxy.FlushInterval = -1
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h := r.Header.Clone()
		h.Del("Content-Length")
		rec.mu.Lock()
		rec.exchanges = append(rec.exchanges, exchange{r.Method, r.URL.RequestURI(), h, body})
		rec.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		proxy.ServeHTTP(w, r)
	}))
	b.Cleanup(front.Close)
	rec.url = front.URL + u.Path
	return rec
}

// rawFloor does the agent's exchanges with nothing else: it posts each
// recorded body and reads the streamed answer to its end, line by line.
// On a wire whose every request is signed (testWire.sign) it signs each,
// as any client must; else it sends the recorded headers as they are.
type rawFloor struct {
	client    *http.Client
	base      *url.URL
	exchanges []exchange
	sign      func(r *http.Request, body []byte) error
}

func (f *rawFloor) run(b *testing.B, after func()) time.Duration {
	start := time.Now()
	for i, x := range f.exchanges {
		req, err := http.NewRequest(x.method, f.base.String()+x.uri, bytes.NewReader(x.body))
		if err != nil {
			b.Fatal(err)
		}
		req.Header = x.header
		if f.sign != nil {
			req.Header = x.header.Clone()
			if err := f.sign(req, x.body); err != nil {
				b.Fatal(err)
			}
		}
		resp, err := f.client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		r := bufio.NewReader(resp.Body)
		lines := 0
		for {
			_, err := r.ReadSlice('\n')
			if err == io.EOF {
				break
			}
			if err != nil && err != bufio.ErrBufferFull {
				b.Fatal(err)
			}
			lines++
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || lines == 0 {
			b.Fatalf("raw floor: %s %s: status %d, %d lines", x.method, x.uri, resp.StatusCode, lines)
		}
		if after != nil && i < overheadRounds { // an answer of calls: a round to persist
			after()
		}
	}
	return time.Since(start)
}

// fsyncRounds is the durable floor's extra: one small write made durable
// per round, on the disk the store uses.
func fsyncRounds(b *testing.B, f *os.File) time.Duration {
	start := time.Now()
	for r := 0; r < overheadRounds; r++ {
		fsyncOnce(b, f)
	}
	return time.Since(start)
}

// fsyncOnce is one round's durable floor: a small record written and
// synced.
func fsyncOnce(b *testing.B, f *os.File) {
	rec := []byte(`{"role":"user","parts":[{"type":"tool_result","text":"ok"}]}` + "\n")
	if _, err := f.Write(rec); err != nil {
		b.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
}

// unspilled is an Anthropic request body with the content of every
// tool_result block (the spilled head and notice the agent sent, or the
// placeholder of a result its context policy cleared) replaced by the
// whole heavy output, as a client that neither spills nor clears would
// send it; n is how many it replaced.
func unspilled(b *testing.B, body []byte) (out []byte, n int) {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		b.Fatalf("a recorded body is not JSON: %v", err)
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			if x["type"] == "tool_result" {
				n++
				x["content"] = heavyOutput
				return x
			}
			for k, e := range x {
				x[k] = walk(e)
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		}
		return v
	}
	out, err := json.Marshal(walk(v))
	if err != nil {
		b.Fatal(err)
	}
	return out, n
}
