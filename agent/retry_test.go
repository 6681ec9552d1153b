package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/sqlite"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/tool"
)

// resending has r's agent send a request again for up to retryFor, its
// waits recorded in waits and not waited (the clock moves by each), with
// no jitter.
func (r *rig) resending(retryFor time.Duration, waits *[]time.Duration) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r.agent.RetryFor = retryFor
	r.agent.pacing = pacing{
		now: func() time.Time { return now },
		sleep: func(ctx context.Context, d time.Duration) error {
			*waits = append(*waits, d)
			now = now.Add(d)
			return ctx.Err()
		},
		jitter: func(int64) int64 { return 0 },
	}
}

// attempt runs a turn of prompt on r, returning its error and events.
func (r *rig) attempt(prompt string) (TurnResult, []Event, error) {
	var events []Event
	tr, err := r.agent.Turn(context.Background(), r.id, prompt, func(e Event) { events = append(events, e) })
	return tr, events, err
}

// of are the texts of events of kind.
func of(events []Event, kind EventKind) []string {
	var out []string
	for _, e := range events {
		if e.Kind == kind {
			out = append(out, e.Text)
		}
	}
	return out
}

// firstText is, per wire, how many events of the fake's stream go up to
// the first piece of an answer's text, that one included: a stream cut
// after one less has shown nothing.
var firstText = map[string]int{
	"anthropic": 3, "bedrock": 3, "vertex": 3, "google-cloud": 3,
	"openai": 2, "openai-responses": 5, "gemini": 1,
}

// cutBeforeOutput is a step whose stream breaks off before anything of
// the answer is shown on wire: cut after the events before its first
// text, or, on Gemini, whose first event holds text already, in the
// middle of its first event.
func cutBeforeOutput(wire string) providertest.Step {
	if firstText[wire] <= 1 {
		return providertest.Step{Raw: `data: {"candidates":[{"content":{"parts":[{"te`, Cut: true}
	}
	return providertest.Step{Text: "Hello there, world.", CutAfter: firstText[wire] - 1}
}

// A request whose stream is cut before anything of its answer was shown
// is sent again from scratch, the same bytes, after the backoff, told as
// a Retry event; the turn ends with the one whole answer stored — on
// every wire.
func TestAStreamCutBeforeAnyOutputIsSentAgain(t *testing.T) {
	for _, wire := range wires() {
		t.Run(wire, func(t *testing.T) {
			r := newWireRig(t, wire)
			var waits []time.Duration
			r.resending(time.Minute, &waits)
			r.srv.Push(cutBeforeOutput(wire), providertest.Step{Text: "the whole answer"})
			tr, events, err := r.attempt("hi")
			if err != nil {
				t.Fatalf("the turn failed: %v", err)
			}
			reqs := r.srv.Requests()
			retries := of(events, Retry)
			must(t, fmt.Sprintf("turn %+v, %d requests, waits %v, retries %q", tr, len(reqs), waits, retries),
				want{tr.Text == "the whole answer" && tr.Reason == "end_turn", "the turn ended with the whole answer"},
				want{len(reqs) == 2, "the request sent twice"},
				want{len(reqs) == 2 && bytes.Equal(reqs[0], reqs[1]), "the same bytes both times"},
				want{len(waits) == 1 && waits[0] == 500*time.Millisecond, "one backoff of 0.5 s"},
				want{len(retries) == 1 && strings.HasPrefix(retries[0], "retrying "+provider.WireName(r.agent.Provider)+" request (attempt 2, for up to 1m0s) in 0.5s: "), "one Retry event saying so"},
				want{len(of(events, Notice)) == 0, "no Notice"})
			msgs := r.stored()
			if len(msgs) != 2 || msgs[1].Cut || textOf(msgs[1]) != "the whole answer" {
				t.Fatalf("stored %+v; want the prompt and the whole answer, once", msgs)
			}
		})
	}
}

// An answer cut after some of it was shown is not sent again: it is
// stored as far as it went, and the turn says so before it fails — on
// every wire, whatever RetryFor allows.
func TestAStreamCutAfterTextIsStoredAndSaidNotSentAgain(t *testing.T) {
	for _, wire := range wires() {
		t.Run(wire, func(t *testing.T) {
			r := newWireRig(t, wire)
			var waits []time.Duration
			r.resending(time.Minute, &waits)
			r.srv.Push(providertest.Step{Text: "Hello there, world.", CutAfter: firstText[wire]}, providertest.Step{Text: "never sent"})
			_, events, err := r.attempt("hi")
			shown := strings.Join(of(events, TextDelta), "")
			notices := of(events, Notice)
			must(t, fmt.Sprintf("err %v, shown %q, notices %q, retries %q", err, shown, notices, of(events, Retry)),
				want{err != nil, "the turn failed"},
				want{shown != "", "some text shown"},
				want{len(r.srv.Requests()) == 1, "the request sent once"},
				want{len(of(events, Retry)) == 0, "no Retry event"},
				want{len(notices) == 1 && strings.HasPrefix(notices[0], fmt.Sprintf("the answer was cut off mid-stream after %d characters; it is stored as far as it went", len([]rune(shown)))), "a Notice saying how far it went"})
			msgs := r.stored()
			if len(msgs) != 2 || !msgs[1].Cut || textOf(msgs[1]) != shown+cutSeparation+CutMarker {
				t.Fatalf("stored %+v; want the prompt and the answer cut after %q", msgs, shown)
			}
		})
	}
}

// An answer cut after its thinking streamed, before any text, was shown
// all the same: it is not sent again.
func TestAStreamCutAfterThinkingIsNotSentAgain(t *testing.T) {
	r := newWireRig(t, "anthropic")
	var waits []time.Duration
	r.resending(time.Minute, &waits)
	// message_start, the thinking block's start, its first delta
	r.srv.Push(providertest.Step{Thinking: []providertest.Thinking{{Text: "let me think"}}, Text: "answer", CutAfter: 3}, providertest.Step{Text: "never sent"})
	_, events, err := r.attempt("hi")
	notices := of(events, Notice)
	must(t, fmt.Sprintf("err %v, thinking %q, notices %q", err, of(events, Thinking), notices),
		want{err != nil, "the turn failed"},
		want{len(of(events, Thinking)) > 0, "thinking shown"},
		want{len(r.srv.Requests()) == 1, "the request sent once"},
		want{len(notices) == 1 && strings.Contains(notices[0], "after its thinking, before any text"), "a Notice saying it was cut after its thinking"})
}

// An error answer the wire's own retries (off here) gave up on — a 529,
// a 500, a 429 — is sent again within RetryFor; a 400 never is; and with
// RetryFor 0 nothing is.
func TestAnErrorStatusIsSentAgainOnlyWhenTransientAndWithinRetryFor(t *testing.T) {
	for _, wire := range wires() {
		for _, c := range []struct {
			status   int
			retryFor time.Duration
			resent   bool
		}{
			{529, time.Minute, true},
			{500, time.Minute, true},
			{429, time.Minute, true},
			{400, time.Minute, false},
			{529, 0, false},
		} {
			t.Run(fmt.Sprintf("%s/%d/retry for %v", wire, c.status, c.retryFor), func(t *testing.T) {
				r := newWireRig(t, wire)
				var waits []time.Duration
				r.resending(c.retryFor, &waits)
				r.srv.Push(providertest.Step{Status: c.status, ErrorMessage: "no"}, providertest.Step{Text: "the answer"})
				tr, events, err := r.attempt("hi")
				reqs := len(r.srv.Requests())
				if c.resent {
					must(t, fmt.Sprintf("turn %+v, err %v, %d requests, retries %q", tr, err, reqs, of(events, Retry)),
						want{err == nil && tr.Text == "the answer", "the turn ended with the answer"},
						want{reqs == 2, "the request sent twice"},
						want{len(of(events, Retry)) == 1, "one Retry event"},
						want{len(waits) == 1 && waits[0] > 0 && waits[0] <= 500*time.Millisecond, "one wait: the retry-after asked for, or the backoff"})
					return
				}
				must(t, fmt.Sprintf("err %v, %d requests, retries %q", err, reqs, of(events, Retry)),
					want{err != nil, "the turn failed"},
					want{reqs == 1, "the request sent once"},
					want{len(of(events, Retry)) == 0, "no Retry event"},
					want{len(waits) == 0, "no wait"})
			})
		}
	}
}

// RetryFor 0: a stream cut before any output is not sent again; the
// turn fails with nothing of the answer stored but the mark that there
// was none, as before.
func TestRetryForZeroSendsNothingAgain(t *testing.T) {
	r := newWireRig(t, "anthropic")
	var waits []time.Duration
	r.resending(0, &waits)
	r.srv.Push(cutBeforeOutput("anthropic"), providertest.Step{Text: "never sent"})
	_, events, err := r.attempt("hi")
	msgs := r.stored()
	must(t, fmt.Sprintf("err %v, requests %d, events %+v, stored %+v", err, len(r.srv.Requests()), events, msgs),
		want{err != nil, "the turn failed"},
		want{len(r.srv.Requests()) == 1, "the request sent once"},
		want{len(of(events, Retry)) == 0 && len(of(events, Notice)) == 0, "no Retry, no Notice"},
		want{len(msgs) == 2 && msgs[1].Cut && textOf(msgs[1]) == NoTextMarker, "the cut answer with nothing in it"})
}

// An error event in the stream, before any output, is sent again when it
// says the provider is overloaded or at fault — on the wires whose error
// keeps the event — and not when it refuses the request.
func TestAnErrorEventBeforeAnyOutputIsSentAgainWhenTransient(t *testing.T) {
	anthropicEvent := func(typ string) providertest.Step {
		return providertest.Step{Raw: `event: error` + "\n" + `data: {"type":"error","error":{"type":"` + typ + `","message":"m"}}` + "\n\n"}
	}
	for _, c := range []struct {
		wire, event string
		step        providertest.Step
		resent      bool
	}{
		{"anthropic", "overloaded_error", anthropicEvent("overloaded_error"), true},
		{"anthropic", "api_error", anthropicEvent("api_error"), true},
		{"anthropic", "invalid_request_error", anthropicEvent("invalid_request_error"), false},
		{"google-cloud", "overloaded_error", anthropicEvent("overloaded_error"), true},
		{"vertex", "overloaded_error", anthropicEvent("overloaded_error"), true},
		{"bedrock", "modelStreamErrorException", providertest.Step{Raw: string(providertest.BedrockException("modelStreamErrorException", "retry your request"))}, true},
		{"bedrock", "validationException", providertest.Step{Raw: string(providertest.BedrockException("validationException", "bad input"))}, false},
		{"gemini", "UNAVAILABLE", providertest.Step{Raw: `data: {"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}` + "\n\n"}, true},
		{"gemini", "INVALID_ARGUMENT", providertest.Step{Raw: `data: {"error":{"code":400,"message":"bad","status":"INVALID_ARGUMENT"}}` + "\n\n"}, false},
		// Chat Completions and the Responses API: their wires' error of an
		// error event keeps its words, not the object (docs/ratelimits.md,
		// "Retries"), so it is not known to be transient.
	} {
		t.Run(c.wire+"/"+c.event, func(t *testing.T) {
			r := newWireRig(t, c.wire)
			var waits []time.Duration
			r.resending(time.Minute, &waits)
			r.srv.Push(c.step, providertest.Step{Text: "the answer"})
			tr, events, err := r.attempt("hi")
			reqs := len(r.srv.Requests())
			if c.resent {
				must(t, fmt.Sprintf("turn %+v, err %v, %d requests, retries %q", tr, err, reqs, of(events, Retry)),
					want{err == nil && tr.Text == "the answer", "the turn ended with the answer"},
					want{reqs == 2, "the request sent twice"},
					want{len(of(events, Retry)) == 1, "one Retry event"})
				return
			}
			must(t, fmt.Sprintf("err %v, %d requests, retries %q", err, reqs, of(events, Retry)),
				want{err != nil, "the turn failed"},
				want{reqs == 1, "the request sent once"},
				want{len(of(events, Retry)) == 0, "no Retry event"})
		})
	}
}

// The resends are bounded by time since the first attempt: a stream cut
// every time is sent while the time so far with the next backoff is
// within RetryFor, then the turn fails saying how often and how long.
func TestResendsAreBoundedByRetryFor(t *testing.T) {
	r := newWireRig(t, "anthropic")
	var waits []time.Duration
	r.resending(3*time.Second, &waits)
	r.srv.Respond = func(providertest.Request) providertest.Step { return cutBeforeOutput("anthropic") }
	_, events, err := r.attempt("hi")
	// 0.5 + 1 = 1.5 s; the next 2 s would end at 3.5 s
	must(t, fmt.Sprintf("err %v, %d requests, waits %v, retries %q", err, len(r.srv.Requests()), waits, of(events, Retry)),
		want{err != nil && strings.Contains(err.Error(), "3 attempts over 1.5s, as long as it may be retried (3s)"), "the turn failed saying how often and how long"},
		want{len(r.srv.Requests()) == 3, "the request sent 3 times"},
		want{len(waits) == 2 && waits[0] == 500*time.Millisecond && waits[1] == time.Second, "backoffs of 0.5 s and 1 s"},
		want{len(of(events, Retry)) == 2, "two Retry events"})
	if msgs := r.stored(); len(msgs) != 2 || textOf(msgs[1]) != NoTextMarker {
		t.Fatalf("stored %+v; want the prompt and an answer with nothing in it", msgs)
	}
}

// failing is a provider whose every answer is its error, counting calls.
type failing struct {
	err   error
	calls int
}

func (f *failing) Complete(context.Context, provider.Request, func(string)) (provider.Response, error) {
	f.calls++
	return provider.Response{}, f.err
}

// A wait the provider asked for that is longer than what is left of
// RetryFor ends the resends with the answer's error, saying so; so does
// a wire's own retries' end for such a wait.
func TestAWaitAskedForPastRetryForEndsTheTurnSayingSo(t *testing.T) {
	refusal := provider.StatusError("anthropic", 429, "slow down", errors.New("sdk"))
	for _, c := range []struct {
		name string
		err  error
		says string
	}{
		{"asked of the agent", &provider.WireError{Msg: refusal.Msg, Status: 429, Err: &provider.RetriesEnded{Err: refusal.Err, Retryable: true, RetryAfter: 2 * time.Minute}},
			"(not sent again: the provider asked to wait 2m0s, more than the 1m0s left of the 1m0s the request may be retried for)"},
		{"the wire's retries' end", &provider.WireError{Msg: refusal.Msg, Status: 429, Err: &provider.RetriesEnded{Err: refusal.Err, Retryable: true, RetryAfter: 5 * time.Minute, TooLong: true, Room: 50 * time.Second}},
			"(not sent again: the provider asked to wait 5m0s, more than the 50s the retries could still wait)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := &failing{err: c.err}
			var waits []time.Duration
			r := failingRig(t, p, time.Minute, &waits)
			_, events, err := r.attempt("hi")
			must(t, fmt.Sprintf("err %v, %d calls, retries %q", err, p.calls, of(events, Retry)),
				want{err != nil && strings.HasSuffix(err.Error(), c.says), "the error saying why it was not sent again"},
				want{errors.Is(err, c.err), "the error the answer's"},
				want{p.calls == 1 && len(waits) == 0, "sent once, no wait"})
		})
	}
}

// failingRig is a rig whose agent's provider is p, resending for up to
// retryFor with its waits in waits.
func failingRig(t *testing.T, p provider.Provider, retryFor time.Duration, waits *[]time.Duration) *rig {
	t.Helper()
	store, err := sqlite.Open(t.TempDir() + "/h.db")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	r := &rig{t: t, agent: &Agent{Provider: p, Store: store, Tools: &tool.Registry{}, Model: "m"}}
	r.resending(retryFor, waits)
	if r.id, err = r.agent.NewConversation(context.Background()); err != nil {
		t.Fatal(err)
	}
	return r
}

// What the wire's sender would not retry (a 503 whose x-should-retry
// said "false") the agent does not send again either; a request that got
// no answer at all is sent again, as long as RetryFor allows.
func TestTheSendersVerdictAndNoAnswer(t *testing.T) {
	for _, c := range []struct {
		name  string
		err   error
		calls int
	}{
		{"x-should-retry false on a 503", provider.StatusError("anthropic", 503, "m", &provider.RetriesEnded{Err: errors.New("sdk")}), 1},
		// 0.5 + 1 = 1.5 s; the next 2 s would end at 3.5 s
		{"no answer", fmt.Errorf("anthropic: %w", &provider.ConnectionError{URL: "http://127.0.0.1:9", Attempts: 1, Err: errors.New("connection refused")}), 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := &failing{err: c.err}
			var waits []time.Duration
			r := failingRig(t, p, 3*time.Second, &waits)
			_, events, err := r.attempt("hi")
			must(t, fmt.Sprintf("err %v, %d calls, retries %q", err, p.calls, of(events, Retry)),
				want{errors.Is(err, c.err), "the turn failed with the error"},
				want{p.calls == c.calls, fmt.Sprintf("%d calls", c.calls)},
				want{len(of(events, Retry)) == c.calls-1, "a Retry event for each resend"})
		})
	}
}

// The attempts sent again are kept as requests that got no answer, with
// their error; the one answered is kept with its answer.
func TestTheAttemptsSentAgainAreKeptAsUnanswered(t *testing.T) {
	r := newWireRig(t, "anthropic")
	r.agent.KeepRequests = true
	var waits []time.Duration
	r.resending(time.Minute, &waits)
	r.srv.Push(cutBeforeOutput("anthropic"), providertest.Step{Text: "the answer"})
	if _, _, err := r.attempt("hi"); err != nil {
		t.Fatal(err)
	}
	log := r.agent.Store.(history.Requests)
	var kept []history.SentRequest
	for n := 1; n <= 2; n++ {
		k, err := log.Request(context.Background(), r.id, n)
		if err != nil {
			t.Fatalf("request %d was not kept: %v", n, err)
		}
		kept = append(kept, k)
	}
	must(t, fmt.Sprintf("kept %+v", kept),
		want{len(kept) == 2, "two requests kept"},
		want{len(kept) == 2 && kept[0].Msg == -1 && kept[0].Error != "", "the first unanswered, with its error"},
		want{len(kept) == 2 && kept[1].Msg == 1 && kept[1].Error == "", "the second answered"},
		want{len(kept) == 2 && bytes.Equal(kept[0].Body, kept[1].Body), "the same body"})
}

// RetryText says the count of attempts when the retries are bounded by
// one, and for how long they may go on when bounded by time; the cause
// is the notice's words for it.
func TestRetryTextSaysTheBoundOfTheRetries(t *testing.T) {
	for _, c := range []struct {
		n    provider.RetryNotice
		want string
	}{
		{provider.RetryNotice{Attempt: 2, Attempts: 5, Wait: 800 * time.Millisecond, Status: 503},
			"retrying anthropic request (attempt 2 of 5) in 0.8s: 503 Service Unavailable"},
		{provider.RetryNotice{Attempt: 3, For: 2 * time.Minute, Wait: time.Second, Status: 529},
			"retrying anthropic request (attempt 3, for up to 2m0s) in 1.0s: 529 Overloaded"},
		{provider.RetryNotice{Attempt: 2, For: time.Minute, Wait: 500 * time.Millisecond, Why: "529 Overloaded"},
			"retrying anthropic request (attempt 2, for up to 1m0s) in 0.5s: 529 Overloaded"},
	} {
		if got := RetryText("anthropic", c.n); got != c.want {
			t.Errorf("RetryText(%+v) = %q, want %q", c.n, got, c.want)
		}
	}
}

// retryingWire is a provider whose every request fails as a wire's does
// after retries of its own: it tells of each retry and ends with a
// connection error counting its attempts, numbered after those its
// context says were made before (provider.WithAttemptsBefore).
type retryingWire struct{ retries, sends int }

func (w *retryingWire) sent() int { return w.sends }

// gatedWire fails as internal/send's and gemini's senders do with a rate
// limiter: a 503 retried after a backoff (told as a RetryNotice), then a
// 429 whose retry-after the limiter holds (told only as a WaitNotice for
// the next attempt), then a 503 that ends the wire's retries as a
// RetriesEnded, which carries no count of attempts.
type gatedWire struct{ sends int }

func (w *gatedWire) Complete(ctx context.Context, _ provider.Request, _ func(string)) (provider.Response, error) {
	w.sends++
	before := provider.AttemptsBefore(ctx)
	provider.NoticeRetry(ctx, provider.RetryNotice{Attempt: before + 2, For: 3 * time.Second, Wait: 10 * time.Millisecond, Status: 503})
	provider.NoticeWait(ctx, provider.WaitNotice{Attempt: before + 3, Until: time.Now(), Why: "429: retry after 10ms"})
	return provider.Response{}, provider.StatusError("anthropic", 503, "m", &provider.RetriesEnded{Err: errors.New("503 overloaded"), Retryable: true})
}

func (w *gatedWire) sent() int { return w.sends }

func (w *retryingWire) Complete(ctx context.Context, _ provider.Request, _ func(string)) (provider.Response, error) {
	w.sends++
	before := provider.AttemptsBefore(ctx)
	for i := range w.retries {
		provider.NoticeRetry(ctx, provider.RetryNotice{Attempt: before + i + 2, For: 3 * time.Second, Wait: 100 * time.Millisecond, Err: syscall.ECONNREFUSED})
	}
	return provider.Response{}, fmt.Errorf("anthropic: %w", &provider.ConnectionError{URL: "http://127.0.0.1:9/v1/messages", Attempts: before + w.retries + 1, Err: syscall.ECONNREFUSED})
}

// The attempts of one request are one count across the wire's own
// retries and the turn's resends: each Retry event numbers the next
// attempt after every one made, and the turn's error says how many there
// were in all (a user read "attempt 20", then "attempt 2", then "after 2
// attempts … sent 2 times" where 22 were made). An attempt told only as
// a wait at the rate limiter counts as the others (the review found
// those missed: "2 3 4 5 6" and "6 attempts" for gatedWire).
func TestARequestsAttemptsAreCountedAcrossTheWiresRetriesAndTheTurnsResends(t *testing.T) {
	for _, c := range []struct {
		name string
		wire interface {
			provider.Provider
			sent() int
		}
		numbers string   // of the Retry events
		says    []string // in the turn's error
	}{
		// three sends (waits 0.5 + 1 s; the next 2 s would pass 3 s),
		// three attempts each: the wire's 2, 3; the turn's 4; the wire's
		// 5, 6; ...
		{"retries told as retries", &retryingWire{retries: 2}, "2 3 4 5 6 7 8 9", []string{
			"could not reach http://127.0.0.1:9/v1/messages after 9 attempts",
			"(not sent again: 9 attempts over 1.5s, as long as it may be retried (3s))"}},
		// each send's third attempt waited at the limiter: told as a
		// wait, not a retry
		{"a retry held at the limiter", &gatedWire{}, "2 4 5 7 8", []string{"9 attempts over"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var waits []time.Duration
			r := failingRig(t, c.wire, 3*time.Second, &waits)
			_, events, err := r.attempt("hi")
			var numbers []string
			for _, text := range of(events, Retry) {
				_, rest, _ := strings.Cut(text, "(attempt ")
				n, _, _ := strings.Cut(rest, ",")
				numbers = append(numbers, n)
			}
			checks := []want{
				{c.wire.sent() == 3, "3 sends"},
				{strings.Join(numbers, " ") == c.numbers, "Retry events numbering attempts " + c.numbers},
			}
			for _, s := range c.says {
				checks = append(checks, want{err != nil && strings.Contains(err.Error(), s), "the error saying " + s})
			}
			must(t, fmt.Sprintf("err %v, %d sends, retries %q", err, c.wire.sent(), of(events, Retry)), checks...)
		})
	}
}
