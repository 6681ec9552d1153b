package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history/sqlite"
	"github.com/myelin-run/myelin/provider/providertest"
)

// idleCost is what n idle event streams cost a process, measured in it:
// bytes of heap (live, after a collection) and of goroutine stacks, and
// goroutines, each per stream.
type idleCost struct {
	heap, stack, goroutines float64
}

// memNow is the live heap and the stacks in use after a collection, and
// the goroutines.
func memNow() (heap, stack uint64, goroutines int) {
	runtime.GC()
	runtime.GC() // a second time: the stacks the first shrank are freed
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc, ms.StackInuse, runtime.NumGoroutine()
}

// openIdle opens n event streams of path on addr over connections of their
// own, each read to its headers, and returns them.
func openIdle(tb testing.TB, addr string, paths func(i int) string, n int) []net.Conn {
	tb.Helper()
	conns := make([]net.Conn, 0, n)
	for i := range n {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			tb.Fatal(err)
		}
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", paths(i), addr)
		resp, err := http.ReadResponse(bufio.NewReaderSize(conn, 512), nil)
		if err != nil {
			tb.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			tb.Fatalf("stream %d of %s: %d", i, paths(i), resp.StatusCode)
		}
		conns = append(conns, conn)
	}
	return conns
}

// idleStreams measures n idle streams of h's, each opened on paths(i).
func idleStreams(tb testing.TB, h http.Handler, paths func(int) string, n int) idleCost {
	tb.Helper()
	hs := httptest.NewServer(h)
	defer hs.Close()
	addr := hs.Listener.Addr().String()
	heap0, stack0, g0 := memNow()
	conns := openIdle(tb, addr, paths, n)
	heap1, stack1, g1 := memNow()
	for _, c := range conns {
		c.Close()
	}
	return idleCost{
		heap:       float64(int64(heap1)-int64(heap0)) / float64(n),
		stack:      float64(int64(stack1)-int64(stack0)) / float64(n),
		goroutines: float64(g1-g0) / float64(n),
	}
}

// bareStream is the floor of an idle stream: net/http's own, a handler
// that sends the headers and waits.
func bareStream(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}

// BenchmarkServeIdleWatchers is what one idle event stream costs the
// server in its own process — live heap, goroutine stacks, goroutines —
// beside the floor, a bare net/http handler that streams nothing, with
// the same clients; on the SQLite store serve runs on (connections of their own in this process, whose
// share is in both). docs/performance.md, "`myelin serve` at scale":
//
//	go test ./server -run '^$' -bench ServeIdleWatchers -benchtime 3x
func BenchmarkServeIdleWatchers(b *testing.B) {
	const n = 2000
	var serve, floor []idleCost
	for b.Loop() {
		f := newFixture(b)
		f.srv.Watchers, f.srv.WatchersPerClient = 2*n, 2*n
		st := sqliteStore(b, f)
		ids := make([]string, n)
		for i := range ids {
			ids[i] = f.newConversation()
		}
		serve = append(serve, idleStreams(b, f.srv, func(i int) string { return "/v1/conversations/" + ids[i] + "/events" }, n))
		floor = append(floor, idleStreams(b, http.HandlerFunc(bareStream), func(int) string { return "/" }, n))
		f.srv.Close()
		f.http.Close()
		st.Close()
	}
	med := func(cs []idleCost, of func(idleCost) float64) float64 {
		v := make([]float64, len(cs))
		for i, c := range cs {
			v[i] = of(c)
		}
		return median(v)
	}
	heap := func(c idleCost) float64 { return c.heap }
	stack := func(c idleCost) float64 { return c.stack }
	gs := func(c idleCost) float64 { return c.goroutines }
	b.ReportMetric(med(serve, heap), "heap-B/stream")
	b.ReportMetric(med(serve, stack), "stack-B/stream")
	b.ReportMetric(med(serve, gs), "goroutines/stream")
	b.ReportMetric(med(floor, heap), "floor-heap-B/stream")
	b.ReportMetric(med(floor, stack), "floor-stack-B/stream")
	b.ReportMetric(med(floor, gs), "floor-goroutines/stream")
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// A stream that has sent what the log held keeps no buffer while it waits
// for more: the bytes it copied went back to be reused, so that ten
// thousand watchers of conversations that once streamed a long page hold
// nothing of it.
func TestAStreamHoldsNoBufferWhileItWaits(t *testing.T) {
	l := newEventLog(0)
	for i := range 200 {
		l.add(EventModelDelta, json.RawMessage(fmt.Sprintf(`{"turn":"turn_1","kind":"text","text":"delta %d of a long answer, some words of it"}`, i)))
	}
	rec := httptest.NewRecorder()
	st := &eventStream{w: rec, rc: http.NewResponseController(rec), timeout: time.Minute, conv: "conv_1"}
	evs, more, gone, restarted, evicted := l.since(0)
	page := EventPage{Events: evs, More: more, Gone: gone, Restarted: restarted, Evicted: evicted}
	if rest, err := st.send(&page); err != nil || rest {
		t.Fatalf("sending the page: rest %v, %v; want all of it sent", rest, err)
	}
	if got := strings.Count(rec.Body.String(), "\nevent: model.delta\n"); got != 200 || st.after != 200 {
		t.Fatalf("the stream wrote %d events and is after event %d; want 200 and 200", got, st.after)
	}
	if cap(st.buf) != 0 {
		t.Errorf("the stream waits holding a buffer of %d bytes; want none", cap(st.buf))
	}
}

// Idle streams share one heartbeat: every stream waiting gets the same
// beat, each beat wakes them all, and the next one is started by the
// streams that wait again.
func TestIdleStreamsShareOneHeartbeat(t *testing.T) {
	b := &beats{every: time.Millisecond}
	first, second := b.next(), b.next()
	if first != second {
		t.Fatal("two streams waiting at once wait on two heartbeats; want one")
	}
	<-first
	select {
	case <-second:
	default:
		t.Fatal("a beat woke one stream and not the other")
	}
	if again := b.next(); again == first {
		t.Fatal("after a beat, a stream waits on the beat that has gone by")
	} else {
		<-again // it beats again: the stream is not left waiting
	}
}

// Every idle stream of the server gets the heartbeat's comment line, two
// streams of two conversations each twice, and no event.
func TestIdleStreamsGetTheHeartbeat(t *testing.T) {
	f := newFixture(t)
	f.srv.beats.every = 10 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for range 2 {
		id := f.newConversation()
		req, _ := http.NewRequestWithContext(ctx, "GET", f.http.URL+"/v1/conversations/"+id+"/events", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		r := bufio.NewReader(resp.Body)
		for beats := 0; beats < 2; {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("the idle stream of %s ended after %d heartbeats: %v", id, beats, err)
			}
			switch {
			case line == ": alive\n":
				beats++
			case line != "\n":
				t.Fatalf("an idle stream of %s got %q; want only heartbeats", id, line)
			}
		}
	}
}

// BenchmarkServeIdleConversation is what a conversation that ran a turn
// (10 rounds of one no-op call, watched) keeps in the server's process
// once it is idle: the live heap it added, per conversation, on the SQLite
// store serve uses (what it keeps of the messages it read and the
// requests it sent is in it), and the share of it that is its events
// kept for watchers that resume (EventsIdle, an hour). The fake
// provider's record of the requests is dropped before each reading.
// docs/performance.md, "`myelin serve` at scale":
//
//	go test ./server -run '^$' -bench ServeIdleConversation -benchtime 3x
func BenchmarkServeIdleConversation(b *testing.B) {
	const convs, rounds = 100, 10
	var per, events []float64
	for b.Loop() {
		f := newFixture(b)
		f.fake.Respond = providertest.Rounds(rounds, "noop--run", `{}`)
		st := sqliteStore(b, f)
		ids := make([]string, convs)
		for i := range ids {
			ids[i] = f.newConversation()
		}
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * convs}}
		// one turn first, so that what every turn's first use makes (the
		// agent's, the provider client's) is in heap0
		if err := watchOneTurn(context.Background(), f, client, f.newConversation(), rounds, func(int, []time.Duration) {}); err != nil {
			b.Fatal(err)
		}
		f.fake.Forget()
		heap0, _, _ := memNow()
		for _, id := range ids {
			if err := watchOneTurn(context.Background(), f, client, id, rounds, func(int, []time.Duration) {}); err != nil {
				b.Fatal(err)
			}
		}
		client.CloseIdleConnections()
		f.fake.Forget()
		heap1, _, _ := memNow()
		per = append(per, float64(int64(heap1)-int64(heap0))/convs)
		m := f.srv.log.(*memoryEvents)
		m.mu.Lock()
		events = append(events, float64(m.bytes)/(convs+1))
		m.mu.Unlock()
		f.srv.Close()
		f.http.Close()
		st.Close()
	}
	b.ReportMetric(median(per), "heap-B/conversation")
	b.ReportMetric(median(events), "events-B/conversation")
}

// sqliteStore puts f's server on a SQLite store, as serve runs (without
// waiting for the disk), and returns it.
func sqliteStore(tb testing.TB, f *fixture) *sqlite.Store {
	tb.Helper()
	st, err := sqlite.OpenWith(filepath.Join(tb.TempDir(), "history.db"), sqlite.Options{Relaxed: true})
	if err != nil {
		tb.Fatal(err)
	}
	f.srv.Agent.Store = st
	return st
}
