package server

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"testing"
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
// the same clients (connections of their own in this process, whose
// share is in both). docs/performance.md, "`myelin serve` at scale":
//
//	go test ./server -run '^$' -bench ServeIdleWatchers -benchtime 3x
func BenchmarkServeIdleWatchers(b *testing.B) {
	const n = 2000
	var serve, floor []idleCost
	for b.Loop() {
		f := newFixture(b)
		f.srv.Watchers, f.srv.WatchersPerClient = 2*n, 2*n
		ids := make([]string, n)
		for i := range ids {
			ids[i] = f.newConversation()
		}
		serve = append(serve, idleStreams(b, f.srv, func(i int) string { return "/v1/conversations/" + ids[i] + "/events" }, n))
		floor = append(floor, idleStreams(b, http.HandlerFunc(bareStream), func(int) string { return "/" }, n))
		f.srv.Close()
		f.http.Close()
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
