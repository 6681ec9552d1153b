package providertest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// This file holds the fault-test fake (issue 32): an Anthropic fake in
// front of which stands a provider's rate limit per key and a seeded mix
// of the faults a provider answers with — overloaded, a server error, a
// stream cut mid-answer — and a log of every request it saw, for a test
// to hold a client to the limit and to the retry-after it was given.

// Limits are the rules of a Limited fake. They are set at NewLimited and
// do not change.
type Limits struct {
	// Rate, when above 0, is how many requests one key may have answered
	// in any Window: the limit is a sliding window (a log of the times of
	// the key's admitted requests), so no span of Window, wherever it
	// starts, holds more than Rate admitted requests of a key. A request
	// past it is refused with a 429 rate_limit_error and is not counted
	// against the limit (a client that hammers gets in as soon as the
	// window has room). 0 means no limit.
	Rate int
	// Window is the limit's span; 0 means one second.
	Window time.Duration
	// RetryAfter, when above 0, is the wait every 429 asks for; at 0 a
	// 429 asks for the time until the key's window has room again. It is
	// sent as retry-after-ms (milliseconds, rounded up) and retry-after
	// (whole seconds, rounded up, at least 1), as Anthropic sends them.
	RetryAfter time.Duration
	// Overloaded, Failed and Cut are the chances, each from 0 to 1 and
	// together at most 1, that a request the limit admitted is answered
	// with a 529 overloaded_error, with a 500 api_error, or, when it
	// streams, with its answer's stream cut after some of its events (the
	// connection closed mid-stream, no message_stop; a whole answer is
	// never cut). A faulted request counts against the limit and takes
	// no step of the script; a cut one takes its step, and its answer is
	// held back until it is all written, then sent up to the cut (a step
	// that Stalls is not seen before its Stall is closed).
	Overloaded, Failed, Cut float64
	// Seed seeds the draws: the same seed and the same requests in the
	// same order give the same faults and the same cuts. Each admitted
	// request draws twice (its fault, its cut point), whatever it gets.
	Seed uint64
	// Now, when set, is the fake's clock (a test's own, to run the limit
	// without waiting); nil means time.Now.
	Now func() time.Time
}

// Seen is one request a Limited fake saw, in its log.
type Seen struct {
	// At is when it arrived, by the fake's clock.
	At time.Time
	// Key is the API key it was sent with: its x-api-key header, else its
	// Authorization header without "Bearer ".
	Key string
	// Status is the status it was answered with: 429 when the limit
	// refused it, 529 or 500 for a fault, else what the script's step
	// said (200 for an answer, a cut one included); 0 until its answer
	// starts.
	Status int
	// Cut is whether the fake cut its stream (Limits.Cut); a step's own
	// CutAfter is not counted.
	Cut bool
	// RetryAfter, on a 429, is the wait it was told: a request of the
	// same key arriving before At+RetryAfter came too early (Log.Early).
	RetryAfter time.Duration
	// Answered is when its answer was written whole (a cut one: when its
	// connection was dropped), by the fake's clock; zero until then, and
	// for a request whose client left first.
	Answered time.Time
	// CutText, on a request whose stream the fake cut, is the text its
	// answer had sent before the cut (its text deltas joined): "" when the
	// cut came before any text — nothing of the answer can have been
	// shown.
	CutText string
	// Body is the request's body as sent (Request decodes it).
	Body string
}

// Request is the request s as Server.Respond is given one, decoded from
// its Body; its Index is -1 (a refused or faulted request has no place in
// the Server's Requests).
func (s Seen) Request() Request {
	body := []byte(s.Body)
	return newRequest(-1, body, measureBody(body))
}

// Limited is the Anthropic fake (Server: its script, Respond, Requests
// and the rest work as there) behind a provider's rate limit per key and
// a seeded mix of faults (Limits), logging every request it saw. With a
// limit (Limits.Rate), every answer, refusals and faults included,
// carries Anthropic's anthropic-ratelimit-requests-limit, -remaining and
// -reset (RFC 3339: when the key's window is empty again) headers.
// Requests refused or faulted by it never reach the script: the Server's
// Requests and Stats hold only the ones that did.
//
// It is for tests only, on loopback; its limit is a test's model of one,
// not Anthropic's (which refills a token bucket continuously).
type Limited struct {
	*Server
	limits Limits

	mu    sync.Mutex
	rng   *rand.Rand
	times map[string][]time.Time // per key, the admitted requests inside the window
	log   Log
	// throttles are the refusals Throttle asked for, oldest first: the
	// next requests get them whatever their key.
	throttles []throttle
}

// throttle is one refusal asked for by Throttle: its wait, and where to
// tell the request refused once it is answered.
type throttle struct {
	wait time.Duration
	told chan Seen
}

// NewLimited starts a Limited fake answering with steps; t must not be
// nil (the fake is closed at its cleanup). It fails t when
// the limits make no sense (a rate or a window below 0, a chance out of
// 0..1, chances that add up past 1).
func NewLimited(t testing.TB, l Limits, steps ...Step) *Limited {
	if err := l.check(); err != nil {
		t.Helper()
		t.Fatalf("providertest.NewLimited: %v", err)
	}
	if l.Window == 0 {
		l.Window = time.Second
	}
	if l.Now == nil {
		l.Now = time.Now
	}
	s := &Server{t: t, wire: "anthropic", steps: steps}
	lim := &Limited{Server: s, limits: l, rng: rand.New(rand.NewPCG(l.Seed, l.Seed^0x9e3779b97f4a7c15)), times: map[string][]time.Time{}}
	s.srv = httptest.NewServer(lim)
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return lim
}

func (l Limits) check() error {
	switch {
	case l.Rate < 0:
		return fmt.Errorf("Limits.Rate is %d: give the requests a key may make per window, or 0 for no limit", l.Rate)
	case l.Window < 0 || l.RetryAfter < 0:
		return fmt.Errorf("Limits.Window (%v) and Limits.RetryAfter (%v) must not be below 0", l.Window, l.RetryAfter)
	}
	for _, c := range []struct {
		name string
		p    float64
	}{{"Overloaded", l.Overloaded}, {"Failed", l.Failed}, {"Cut", l.Cut}} {
		if c.p < 0 || c.p > 1 || c.p != c.p {
			return fmt.Errorf("Limits.%s is %v: a chance is from 0 to 1", c.name, c.p)
		}
	}
	if sum := l.Overloaded + l.Failed + l.Cut; sum > 1 {
		return fmt.Errorf("Limits.Overloaded+Failed+Cut is %v: the chances of one request must add up to 1 at most", sum)
	}
	return nil
}

// Throttle has the next request to arrive, whatever its key and however
// far it is from the limit, refused with a 429 rate_limit_error asking
// for wait (wait must be above 0), as a provider refuses when a limit the
// fake does not model is reached (its tokens, the organisation's, a
// burst it will not take); the refusal takes no place in the key's limit.
// Each call refuses one request, in the order asked. The channel returned
// receives, once, the refused request as logged, after its answer was
// written (Seen.Answered set); a test waits on it to act while the wait
// has not passed (restart a client, say).
func (l *Limited) Throttle(wait time.Duration) <-chan Seen {
	if wait <= 0 {
		l.t.Helper()
		l.t.Fatalf("providertest: Throttle(%v): a 429 asks for a wait above 0", wait)
	}
	told := make(chan Seen, 1)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.throttles = append(l.throttles, throttle{wait: wait, told: told})
	return told
}

// Log returns every request seen so far, in the order they arrived.
func (l *Limited) Log() Log {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append(Log(nil), l.log...)
}

// verdict is what the fake decided for one request, before answering it.
type verdict struct {
	index  int // in the log
	status int // 429, 529, 500, or 0 to answer with the script
	cut    float64
	wait   time.Duration // a 429's
	told   chan Seen     // a Throttle's refusal: told once answered
}

// ServeHTTP applies the limit and the draws, then answers: a refusal or
// a fault itself, else with the script (cut when drawn so).
func (l *Limited) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body) // kept in the log, and read again by the script
	r.Body = io.NopCloser(bytes.NewReader(body))
	v := l.admit(w.Header(), keyOf(r), string(body))
	switch v.status {
	case http.StatusTooManyRequests:
		w.Header().Set("retry-after-ms", strconv.FormatInt(ceilDiv(v.wait, time.Millisecond), 10))
		w.Header().Set("retry-after", strconv.FormatInt(max(1, ceilDiv(v.wait, time.Second)), 10))
		l.refuse(w, Step{Status: v.status, ErrorMessage: "This request would exceed the rate limit for your organization of " + strconv.Itoa(l.limits.Rate) + " requests per " + l.limits.Window.String() + "."})
		l.answered(v, "")
		return
	case 529:
		l.refuse(w, Step{Status: v.status, ErrorMessage: "Overloaded"})
		l.answered(v, "")
		return
	case http.StatusInternalServerError:
		l.refuse(w, Step{Status: v.status, ErrorMessage: "Internal server error"})
		l.answered(v, "")
		return
	}
	// The log is written before the client can have read the end of the
	// answer, so that a test reading it then sees it whole.
	rec := &recorder{w: w, logged: func(status int, cut bool, cutText string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		seen := &l.log[v.index]
		seen.Status, seen.Cut = status, cut
		if cut { // logged whole before the client can read the cut
			seen.Answered, seen.CutText = l.limits.Now(), cutText
		}
	}}
	if v.cut >= 0 {
		rec.buf = &bytes.Buffer{}
	}
	l.Server.serve(rec, r)
	if !rec.wrote { // nothing written: net/http answers 200
		rec.WriteHeader(http.StatusOK)
	}
	cutText := ""
	if rec.buf != nil { // drawn to be cut, and not hijacked by its step
		cutText = rec.cutAt(v.cut)
	}
	if r.Context().Err() == nil || rec.cut { // a client that left was not answered
		l.answered(v, cutText)
	}
}

// answered logs that v's request has been answered whole (a cut one
// with cutText sent; a refusal's bytes flushed to the connection, an
// answer's written to it, net/http flushing the rest as the handler
// returns), and tells a Throttle waiting for it.
func (l *Limited) answered(v verdict, cutText string) {
	l.mu.Lock()
	seen := &l.log[v.index]
	if !seen.Cut { // a cut one was logged as it was cut (recorder.cutAt)
		seen.Answered, seen.CutText = l.limits.Now(), cutText
	}
	told := *seen
	l.mu.Unlock()
	if v.told != nil {
		v.told <- told
	}
}

// admit logs the request of key and decides its fate: refused by the
// limit, faulted, cut (verdict.cut ≥ 0: where, from 0 to 1), or answered.
// It sets the rate-limit headers on h.
func (l *Limited) admit(h http.Header, key, body string) verdict {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.limits.Now()
	v := verdict{index: len(l.log), cut: -1}
	seen := Seen{At: now, Key: key, Body: body}
	times := l.times[key]
	for len(times) > 0 && !times[0].After(now.Add(-l.limits.Window)) {
		times = times[1:] // out of the window (now-Window, now]
	}
	switch {
	case len(l.throttles) > 0:
		th := l.throttles[0]
		l.throttles = l.throttles[1:]
		v.status, v.wait, v.told = http.StatusTooManyRequests, th.wait, th.told
		seen.Status, seen.RetryAfter = v.status, v.wait
	case l.limits.Rate > 0 && len(times) >= l.limits.Rate:
		v.status, v.wait = http.StatusTooManyRequests, times[0].Add(l.limits.Window).Sub(now)
		if l.limits.RetryAfter > 0 {
			v.wait = l.limits.RetryAfter
		}
		seen.Status, seen.RetryAfter = v.status, v.wait
	default:
		times = append(times, now)
		fault, at := l.rng.Float64(), l.rng.Float64()
		switch {
		case fault < l.limits.Overloaded:
			v.status = 529
		case fault < l.limits.Overloaded+l.limits.Failed:
			v.status = http.StatusInternalServerError
		case fault < l.limits.Overloaded+l.limits.Failed+l.limits.Cut:
			v.cut = at
		}
		seen.Status = v.status
	}
	l.times[key] = times
	l.log = append(l.log, seen)
	if l.limits.Rate > 0 {
		h.Set("anthropic-ratelimit-requests-limit", strconv.Itoa(l.limits.Rate))
		h.Set("anthropic-ratelimit-requests-remaining", strconv.Itoa(max(0, l.limits.Rate-len(times))))
		reset := now // fully replenished when the newest admitted leaves the window
		if len(times) > 0 {
			reset = times[len(times)-1].Add(l.limits.Window)
		}
		h.Set("anthropic-ratelimit-requests-reset", reset.UTC().Format(time.RFC3339Nano))
	}
	return v
}

// refuse answers with step's status and Anthropic's error body for it.
func (l *Limited) refuse(w http.ResponseWriter, step Step) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("request-id", "req_providertest")
	w.WriteHeader(step.Status)
	io.WriteString(w, anthropicError(step))
	w.(http.Flusher).Flush() // answered whole when Seen.Answered says
}

// keyOf is the API key r was sent with.
func keyOf(r *http.Request) string {
	if k := r.Header.Get("x-api-key"); k != "" {
		return k
	}
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
}

func ceilDiv(d, unit time.Duration) int64 { return int64((d + unit - 1) / unit) }

// recorder stands between the Server and the connection: it keeps the
// status answered and, with buf, holds the whole answer back so that it
// can be cut (cutAt). A step that hijacks the connection (its own cut)
// gets what was held written out first, and is then no longer held.
type recorder struct {
	w http.ResponseWriter
	// logged logs the status, when written; a cut, with the text it had
	// sent, before it is written
	logged func(status int, cut bool, cutText string)
	status int
	buf    *bytes.Buffer
	wrote  bool
	cut    bool // cutAt cut it
}

func (r *recorder) Header() http.Header { return r.w.Header() }

func (r *recorder) WriteHeader(status int) {
	if r.wrote {
		return
	}
	r.status, r.wrote = status, true
	r.logged(status, false, "")
	if r.buf == nil {
		r.w.WriteHeader(status)
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	if !r.wrote {
		r.WriteHeader(http.StatusOK)
	}
	if r.buf != nil {
		return r.buf.Write(p)
	}
	return r.w.Write(p)
}

// Flush sends what was written, unless it is held back.
func (r *recorder) Flush() {
	if r.buf == nil {
		r.w.(http.Flusher).Flush()
	}
}

// Hijack writes out what was held back, then hands over the connection.
func (r *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if !r.wrote {
		r.WriteHeader(http.StatusOK)
	}
	r.release()
	r.w.(http.Flusher).Flush()
	return r.w.(http.Hijacker).Hijack()
}

// release writes what was held back and holds no more.
func (r *recorder) release() {
	if r.buf == nil {
		return
	}
	buf := r.buf
	r.buf = nil
	r.w.WriteHeader(r.status)
	r.w.Write(buf.Bytes())
}

// cutAt ends a held-back answer: a 200 event stream of two events or more
// is logged as cut and sent up to a point (at, from 0 to 1, picks it: at
// least the first event, never the last), its connection then dropped;
// anything else is sent whole. It returns the text the events sent before
// a cut carried (textOf).
func (r *recorder) cutAt(at float64) string {
	events := strings.SplitAfter(r.buf.String(), "\n\n")
	if events[len(events)-1] == "" {
		events = events[:len(events)-1]
	}
	stream := strings.HasPrefix(r.Header().Get("Content-Type"), "text/event-stream")
	if r.status != http.StatusOK || !stream || len(events) < 2 {
		r.release()
		return ""
	}
	keep := 1 + int(at*float64(len(events)-1))
	text := textOf(events[:keep])
	r.logged(r.status, true, text)
	r.buf, r.cut = nil, true
	r.w.WriteHeader(r.status)
	io.WriteString(r.w, strings.Join(events[:keep], ""))
	cut(r.w)
	return text
}

// textOf is the text Anthropic stream events carry: their text_delta
// deltas' text, joined.
func textOf(events []string) string {
	var text strings.Builder
	for _, e := range events {
		for line := range strings.SplitSeq(e, "\n") {
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok {
				continue
			}
			var ev struct {
				Delta struct{ Type, Text string }
			}
			if json.Unmarshal([]byte(data), &ev) == nil && ev.Delta.Type == "text_delta" {
				text.WriteString(ev.Delta.Text)
			}
		}
	}
	return text.String()
}

// Log is the requests a Limited fake saw, in the order they arrived.
type Log []Seen

// Key is the requests sent with key.
func (l Log) Key(key string) Log {
	var out Log
	for _, s := range l {
		if s.Key == key {
			out = append(out, s)
		}
	}
	return out
}

// Keys is the keys the requests were sent with, each once, in the order
// first seen.
func (l Log) Keys() []string {
	var keys []string
	seen := map[string]bool{}
	for _, s := range l {
		if !seen[s.Key] {
			seen[s.Key] = true
			keys = append(keys, s.Key)
		}
	}
	return keys
}

// Admitted is the requests the limit let through (every one not a 429).
func (l Log) Admitted() Log {
	var out Log
	for _, s := range l {
		if s.Status != http.StatusTooManyRequests {
			out = append(out, s)
		}
	}
	return out
}

// Count is how many requests were answered with status.
func (l Log) Count(status int) int {
	n := 0
	for _, s := range l {
		if s.Status == status {
			n++
		}
	}
	return n
}

// Cuts is how many requests had their stream cut by the fake.
func (l Log) Cuts() int {
	n := 0
	for _, s := range l {
		if s.Cut {
			n++
		}
	}
	return n
}

// MaxIn is the most requests of l that arrived within any span of length
// window, of whatever keys l holds (take Key first for one key's): the
// largest count of requests in (t-window, t] for t the arrival of one of
// them, the span the limit counts in.
func (l Log) MaxIn(window time.Duration) int {
	at := make([]time.Time, len(l))
	for i, s := range l {
		at[i] = s.At
	}
	sortTimes(at)
	most, from := 0, 0
	for i, t := range at {
		for !at[from].After(t.Add(-window)) {
			from++
		}
		most = max(most, i-from+1)
	}
	return most
}

func sortTimes(at []time.Time) {
	for i := 1; i < len(at); i++ { // the log is nearly in order already
		for j := i; j > 0 && at[j].Before(at[j-1]); j-- {
			at[j], at[j-1] = at[j-1], at[j]
		}
	}
}

// Early is a request that arrived before the retry-after its key was last
// given had passed.
type Early struct {
	Seen
	// Until is when the key's last 429 said it could come back.
	Until time.Time
}

// Early is every request that arrived while the retry-after last given
// to its key (by the latest 429 of that key logged before it) had not yet
// passed. Arrival is the fake's: a request sent before its client read
// the 429 (another worker's, in flight) counts too.
func (l Log) Early() []Early {
	var out []Early
	until := map[string]time.Time{}
	for _, s := range l {
		if u, ok := until[s.Key]; ok && s.At.Before(u) {
			out = append(out, Early{Seen: s, Until: u})
		}
		if s.Status == http.StatusTooManyRequests {
			until[s.Key] = s.At.Add(s.RetryAfter)
		}
	}
	return out
}

// EarlySent is Early for the requests a client sent after it could have
// read the 429: a 429 of the key holds back only the requests that
// arrived grace or more after it was answered (Seen.Answered; one never
// answered holds back none), and the latest time any of those 429s said
// is the one they are held to. The fake cannot see when a client read a
// 429, nor when the client told the others sharing its key: grace stands
// for that — the answer's way back, the client's reading and passing it
// on, and a request of another client already on its way meanwhile. A
// request that arrived within grace of the 429 is taken as in flight,
// not as sent against it.
func (l Log) EarlySent(grace time.Duration) []Early {
	var out []Early
	refusals := map[string][]Seen{} // per key, the 429s logged so far
	for _, s := range l {
		var until time.Time
		for _, q := range refusals[s.Key] {
			if !q.Answered.IsZero() && !s.At.Before(q.Answered.Add(grace)) && q.At.Add(q.RetryAfter).After(until) {
				until = q.At.Add(q.RetryAfter)
			}
		}
		if s.At.Before(until) {
			out = append(out, Early{Seen: s, Until: until})
		}
		if s.Status == http.StatusTooManyRequests {
			refusals[s.Key] = append(refusals[s.Key], s)
		}
	}
	return out
}
