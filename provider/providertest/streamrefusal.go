package providertest

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/ratelimit"
	"github.com/myelin-run/myelin/ratelimit/ratelimittest"
)

// This file is the check every wire passes alike for a refusal that comes
// inside an answer of 200 — an error event in its stream (Anthropic's
// rate_limit_error or overloaded_error, Bedrock's throttlingException
// frame, OpenAI's error chunk, the Responses API's error event or failed
// response, Gemini's error object): the wire's rate limiter is told of
// it as of the same refusal answered with its status (docs/ratelimits.md,
// "Refusals inside a stream").

// StreamRefusal is one refusal inside a stream, for CheckStreamRefusal.
type StreamRefusal struct {
	// Name is the error's name as the stream gives it, which the
	// limiter's reason (State.Why) is to name.
	Name string
	// Limited is a refusal for the key's rate limit: one request of the
	// key goes first after it (a budget of 1). Otherwise (overloaded, a
	// server's fault) the budget is left as it was.
	Limited bool
	// RetryAfter is the wait the refusal asks for (Gemini's RetryInfo),
	// 0 for none: the key is held until then.
	RetryAfter time.Duration
}

// StreamRefusalStart is the time of the clock CheckStreamRefusal's
// limiter reads: it stands still.
var StreamRefusalStart = time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)

// CheckStreamRefusal sends req once through the wire newWire makes with
// lim (a limiter with a Shared store in memory, on a clock that stands
// at StreamRefusalStart), its fake answering 200 with a stream that ends
// in r; and fails t unless the request failed and the limiter was told of
// r under the one key the request waited under, in the process and in
// the store alike: its reason names r.Name, a rate limit leaves a budget
// of 1, any other refusal the budget the answer's 200 left (none said:
// no bound), a wait asked for holds the key until then, and the request
// counts as one answer, not two. It returns the key.
func CheckStreamRefusal(t *testing.T, newWire func(t *testing.T, lim *ratelimit.Limiter) provider.Provider, req provider.Request, r StreamRefusal) ratelimit.Key {
	t.Helper()
	store := &keyed{}
	lim := &ratelimit.Limiter{Clock: stillClock{}, Shared: store}
	p := newWire(t, lim)
	if _, err := p.Complete(context.Background(), req, nil); err == nil {
		t.Fatal("the request succeeded; its stream was to end with an error event")
	}
	keys := store.keys()
	if len(keys) == 0 {
		t.Fatal("the limiter saw no key: the request did not wait at it")
	}
	key := keys[0]
	for _, k := range keys {
		if k != key {
			t.Fatalf("the limiter saw the keys %v, want one", keys)
		}
	}
	shared, found, err := store.Load(context.Background(), key)
	if err != nil || !found {
		t.Fatalf("the store holds no state of %v (found %v, err %v)", key, found, err)
	}
	for _, s := range []struct {
		where string
		st    ratelimit.State
	}{{"in the process", lim.State(key)}, {"in the store", shared}} {
		st := s.st
		if !strings.Contains(st.Why, r.Name) {
			t.Errorf("%s the key's reason is %q, want it to name %q: the limiter was not told of the refusal in the stream", s.where, st.Why, r.Name)
		}
		if strings.Contains(st.Why, QuotedKey) {
			t.Errorf("%s the key's reason %q holds the error's message", s.where, st.Why)
		}
		want := int64(-1)
		if r.Limited {
			want = 1
		}
		if st.Remaining != want {
			t.Errorf("%s the key's budget is %d, want %d", s.where, st.Remaining, want)
		}
		if next := StreamRefusalStart.Add(r.RetryAfter); r.RetryAfter > 0 && !st.NextAllowed.Equal(next) {
			t.Errorf("%s the key may send from %v, want %v: the wait the refusal asked for", s.where, st.NextAllowed, next)
		}
		if st.Sent != 1 || st.Answers != 1 {
			t.Errorf("%s the key counts %d sent and %d answers, want 1 and 1: the refusal in the stream is no second answer", s.where, st.Sent, st.Answers)
		}
	}
	return key
}

// keyed is a Shared store in memory that records the keys spent from.
type keyed struct {
	ratelimittest.Memory
	mu    sync.Mutex
	spent []ratelimit.Key
}

func (k *keyed) Spend(ctx context.Context, key ratelimit.Key, now time.Time, probe time.Duration) (ratelimit.State, bool, error) {
	k.mu.Lock()
	k.spent = append(k.spent, key)
	k.mu.Unlock()
	return k.Memory.Spend(ctx, key, now, probe)
}

func (k *keyed) keys() []ratelimit.Key {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]ratelimit.Key(nil), k.spent...)
}

// stillClock is a clock that stands at StreamRefusalStart; a wait on it
// passes at once.
type stillClock struct{}

func (stillClock) Now() time.Time { return StreamRefusalStart }

func (stillClock) After(time.Duration) (<-chan time.Time, func()) {
	ch := make(chan time.Time, 1)
	ch <- StreamRefusalStart
	return ch, func() {}
}

// AnthropicErrorEvent is the stream of an answer of 200 that an error
// event of type typ ("overloaded_error", "rate_limit_error", ...) cuts
// after its message_start, as Anthropic's API, Vertex and the Google
// Cloud gateway send it. Its message quotes a key, as a provider's may:
// nothing is to keep it.
func AnthropicErrorEvent(typ string) string {
	return "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n" +
		"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"" + typ + "\",\"message\":\"" + QuotedKey + "\"}}\n\n"
}

// QuotedKey is what the error events of CheckStreamRefusal's streams
// quote as their message: the limiter's reasons must not hold it.
const QuotedKey = "sk-quoted-in-the-message"
