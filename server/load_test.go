package server

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/myelin-run/myelin/provider/providertest"
)

// loadResult is what one load run measured.
type loadResult struct {
	wall      time.Duration
	events    int
	rounds    int
	latencies []time.Duration // each event: appended on the server → read by its client
}

func (r loadResult) p(q float64) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	return r.latencies[min(len(r.latencies)-1, int(q*float64(len(r.latencies))))]
}

// runLoad starts convs conversations at once through the API, each a turn
// of rounds rounds of one no-op call against the fake provider, each
// watched by its own client from its first event; it fails tb when any
// client misses an event, sees one twice, or a turn does not end as it
// should.
func runLoad(tb testing.TB, convs, rounds int) loadResult {
	f := newFixture(tb)
	f.fake.Respond = providertest.Rounds(rounds, "noop--run", `{}`)
	ids := make([]string, convs)
	for i := range ids {
		ids[i] = f.newConversation()
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * convs}}
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	var mu sync.Mutex
	var res loadResult
	errs := make(chan error, convs)
	var wg sync.WaitGroup
	start := time.Now()
	for _, id := range ids {
		wg.Go(func() {
			errs <- watchOneTurn(ctx, f, client, id, rounds, func(events int, lat []time.Duration) {
				mu.Lock()
				res.events += events
				res.rounds += rounds
				res.latencies = append(res.latencies, lat...)
				mu.Unlock()
			})
		})
	}
	wg.Wait()
	res.wall = time.Since(start)
	close(errs)
	for err := range errs {
		if err != nil {
			tb.Fatal(err)
		}
	}
	slices.Sort(res.latencies)
	return res
}

// watchOneTurn opens conversation id's events, starts its turn, and reads
// to turn.finished, checking that the ids run 1, 2, 3… with none missing
// or twice and that the turn ran its rounds.
func watchOneTurn(ctx context.Context, f *fixture, client *http.Client, id string, rounds int, done func(int, []time.Duration)) error {
	req, _ := http.NewRequestWithContext(ctx, "GET", f.http.URL+"/v1/conversations/"+id+"/events", nil)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sresp, err := client.Post(f.http.URL+"/v1/conversations/"+id+"/turns", "application/json", strings.NewReader(`{"prompt":"go"}`))
	if err != nil {
		return err
	}
	sresp.Body.Close()
	if sresp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("%s: starting the turn: %d", id, sresp.StatusCode)
	}
	log := f.srv.log.(*memoryEvents).log(id)
	r := bufio.NewReader(resp.Body)
	var lat []time.Duration
	var seq int64
	finished, tools := 0, 0
	for finished == 0 {
		line, err := r.ReadString('\n')
		if err != nil {
			return fmt.Errorf("%s: the stream ended after event %d: %v", id, seq, err)
		}
		switch {
		case strings.HasPrefix(line, "id: "):
			var n int64
			fmt.Sscan(line[4:], &n)
			if n != seq+1 {
				return fmt.Errorf("%s: event %d after event %d", id, n, seq)
			}
			seq = n
			if at, ok := log.appendedAt(n); ok {
				lat = append(lat, time.Since(at))
			}
		case line == "event: tool.finished\n":
			tools++
		case line == "event: turn.finished\n":
			finished++
		case strings.HasPrefix(line, "data: ") && finished > 0:
			if !strings.Contains(line, `"reason":"end_turn"`) || !strings.Contains(line, fmt.Sprintf(`"rounds":%d`, rounds)) {
				return fmt.Errorf("%s: the turn ended %s", id, line)
			}
		}
	}
	if tools != rounds {
		return fmt.Errorf("%s: %d tool.finished events for %d rounds", id, tools, rounds)
	}
	done(int(seq), lat)
	return nil
}

// Fifty conversations advance at once through the API, each watched live:
// no client misses an event or sees one twice. Bounded by runLoad's
// five minutes, never by a timed assertion; the figures are logged.
func TestFiftyConversationsAtOnceThroughTheAPILoseNoEvent(t *testing.T) {
	res := runLoad(t, 50, 10)
	t.Logf("%d rounds, %d events in %v: %.0f rounds/s; event latency p50 %v, p99 %v",
		res.rounds, res.events, res.wall, float64(res.rounds)/res.wall.Seconds(), res.p(0.5), res.p(0.99))
}

// BenchmarkServeLoad is the load test's figures: 50 conversations at once,
// a turn of 10 rounds each, through the API and over loopback, against the
// fake provider and an in-memory store. docs/performance.md has them:
//
//	go test ./server -run '^$' -bench ServeLoad -benchtime 5x
func BenchmarkServeLoad(b *testing.B) {
	var walls, p99s, p50s []float64
	var rounds, events int
	for b.Loop() {
		res := runLoad(b, 50, 10)
		walls = append(walls, res.wall.Seconds())
		p99s = append(p99s, float64(res.p(0.99).Microseconds())/1000)
		p50s = append(p50s, float64(res.p(0.5).Microseconds())/1000)
		rounds, events = res.rounds, res.events
	}
	med := func(v []float64) float64 { slices.Sort(v); return v[len(v)/2] }
	b.ReportMetric(float64(rounds)/med(walls), "rounds/s")
	b.ReportMetric(float64(events)/med(walls), "events/s")
	b.ReportMetric(med(p50s), "p50-ms")
	b.ReportMetric(med(p99s), "p99-ms")
}
