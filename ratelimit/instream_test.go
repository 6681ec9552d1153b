package ratelimit

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// inStream is what a stream's error event read at t says: FromResponse
// of it with status 0, as a wire reads it.
func inStream(t time.Time, event string) Observation {
	o := FromResponse("", 0, nil, []byte(event), t)
	o.From = "api.anthropic.com"
	return o
}

// A refusal inside a stream whose 200 was observed already is applied as
// the same refusal answered with its status — a rate limit lets one go
// first, a wait it asked for holds the key, an overload keeps the budget
// — and is not counted as a second answer of the request, in the process
// and in a Shared store alike.
func TestARefusalInsideAStreamIsObservedAsItsStatusWouldBeButCountedOnce(t *testing.T) {
	start := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		event  string
		budget int64
		next   time.Time
	}{
		{"a rate limit", `{"type":"error","error":{"type":"rate_limit_error","message":"sk-ant-quoted"}}`, 1, time.Time{}},
		{"an overload", `{"type":"error","error":{"type":"overloaded_error","message":"sk-ant-quoted"}}`, 6, time.Time{}},
		{"a rate limit with a retry delay", `{"error":{"code":429,"message":"sk-ant-quoted","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"20s"}]}}`, 1, start.Add(20 * time.Second)},
		{"Bedrock's throttling frame", `{"type":"error","error":{"type":"throttlingException","message":"sk-ant-quoted"}}`, 1, time.Time{}},
	} {
		for _, shared := range []bool{false, true} {
			t.Run(tc.name+map[bool]string{false: "", true: " shared"}[shared], func(t *testing.T) {
				clock := newFakeClock(start)
				store := &memShared{}
				l := &Limiter{Clock: clock}
				if shared {
					l.Shared = store
				}
				ctx := context.Background()
				w, err := l.Wait(ctx, testKey, nil)
				if err != nil {
					t.Fatal(err)
				}
				// the stream began: 200, six requests left
				if err := l.ObserveAnswer(ctx, testKey, w.Ticket, left(start, 6)); err != nil {
					t.Fatal(err)
				}
				o := inStream(start, tc.event)
				if err := l.ObserveInStream(ctx, testKey, o); err != nil {
					t.Fatal(err)
				}
				states := []State{l.State(testKey)}
				if shared {
					st, _, _ := store.Load(ctx, testKey)
					states = append(states, st)
				}
				for _, st := range states {
					if st.Remaining != tc.budget || !st.NextAllowed.Equal(tc.next) {
						t.Errorf("budget %d, next %v; want %d, %v", st.Remaining, st.NextAllowed, tc.budget, tc.next)
					}
					if st.Sent != 1 || st.Answers != 1 {
						t.Errorf("sent %d, answers %d; want 1 and 1: the request is answered once", st.Sent, st.Answers)
					}
					if !strings.Contains(st.Why, o.Error) || strings.Contains(st.Why, "sk-ant-quoted") {
						t.Errorf("why %q: want it to name %q and to hold no message", st.Why, o.Error)
					}
				}
			})
		}
	}
}

// An error event that names no refusal, fault nor wait (an invalid
// request, a body no wire's) says nothing of the limits: the key is as
// its 200 left it. (Taken as an answer, a body naming nothing would lift
// the budget to no bound.)
func TestAnErrorInsideAStreamThatNamesNoRefusalIsNotObserved(t *testing.T) {
	start := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	l := &Limiter{Clock: newFakeClock(start)}
	ctx := context.Background()
	w, _ := l.Wait(ctx, testKey, nil)
	_ = l.ObserveAnswer(ctx, testKey, w.Ticket, left(start, 3))
	before := l.State(testKey)
	for _, event := range []string{
		`{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long"}}`,
		`not json`,
		``,
	} {
		if err := l.ObserveInStream(ctx, testKey, inStream(start, event)); err != nil {
			t.Fatal(err)
		}
		if got := l.State(testKey); got != before {
			t.Errorf("after %q the state is %+v, want it as before, %+v", event, got, before)
		}
	}
}

// Bedrock's exceptions inside a stream come named with a lower-case first
// letter (the anthropic wire reads them as error events of that type):
// read as their names are in x-amzn-errortype, the name kept as given.
// OpenAI's server_error, which a stream's error object names without a
// status, is a server's fault, and the Responses API's
// server_is_overloaded an overload.
func TestStreamNamesOfBedrocksExceptionsAndOpenAIsServerErrorAreRead(t *testing.T) {
	for _, tc := range []struct {
		body string
		want kind
	}{
		{`{"type":"error","error":{"type":"throttlingException","message":"m"}}`, kind{Limited: true}},
		{`{"type":"error","error":{"type":"serviceUnavailableException","message":"m"}}`, kind{Overloaded: true}},
		{`{"type":"error","error":{"type":"modelNotReadyException","message":"m"}}`, kind{Overloaded: true}},
		{`{"type":"error","error":{"type":"internalServerException","message":"m"}}`, kind{ServerFault: true}},
		{`{"type":"error","error":{"type":"validationException","message":"m"}}`, kind{}},
		{`{"type":"error","error":{"type":"modelStreamErrorException","message":"m"}}`, kind{}},
		{`{"error":{"message":"m","type":"server_error","param":null,"code":null}}`, kind{ServerFault: true}},
		{`{"error":{"code":"server_error","message":"m"}}`, kind{ServerFault: true}},
		{`{"type":"error","error":{"type":"Exception","message":"m"}}`, kind{}},
		{`{"error":{"type":"error","code":"server_is_overloaded","message":"m","param":null}}`, kind{Overloaded: true}},
	} {
		o := FromResponse("", 0, nil, []byte(tc.body), now)
		if kindOf(o) != tc.want {
			t.Errorf("%s: kind %+v, want %+v", tc.body, kindOf(o), tc.want)
		}
	}
	o := FromResponse("bedrock", 0, http.Header{}, []byte(`{"type":"error","error":{"type":"throttlingException","message":"m"}}`), now)
	if o.Error != "throttlingException" {
		t.Errorf("the error's name is %q, want it as the stream gave it", o.Error)
	}
}
