package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/workspace"
)

// The baseline of issue 32, before it: one server, faultTurns turns at once,
// each of faultRounds tool rounds and a last answer, against a provider
// that lets one key make faultRate requests a second and answers 429 with
// retry-after: 1 beyond it. The wire retries as `myelin serve` has it by
// default (provider.DefaultRetries in internal/send, each retry after the
// answer's retry-after-ms, else its retry-after).
const (
	faultTurns  = 20
	faultRounds = 2
	faultRate   = 5
)

// TestFaultBaselineTurnsAgainstARateLimitedProvider measures what today's
// code does against a provider's rate limit: how many turns end with the
// 429 as their error, how many requests the provider refused, how long it
// all took. It is a measurement, not a check, and takes many seconds, so
// it runs only with MYELIN_FAULT_BASELINE=1; docs/scale.md has its
// figures:
//
//	MYELIN_FAULT_BASELINE=1 go test ./server -run FaultBaseline -count=1 -v
func TestFaultBaselineTurnsAgainstARateLimitedProvider(t *testing.T) {
	if os.Getenv("MYELIN_FAULT_BASELINE") != "1" {
		t.Skip("a measurement of many seconds: set MYELIN_FAULT_BASELINE=1 to run it")
	}
	fake := providertest.NewLimited(t, providertest.Limits{Rate: faultRate, RetryAfter: time.Second})
	fake.Respond = providertest.Rounds(faultRounds, "noop--run", `{}`)
	f := serveOn(t, fake.URL)
	ids := make([]string, faultTurns)
	for i := range ids {
		ids[i] = f.newConversation()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	type ending struct {
		Reason, Error string
		err           error
	}
	endings := make([]ending, len(ids))
	var wg sync.WaitGroup
	start := time.Now()
	for i, id := range ids {
		wg.Go(func() {
			data, err := finishOf(ctx, f, id)
			endings[i].err = err
			if err == nil {
				endings[i].err = json.Unmarshal(data, &endings[i])
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	died, other := 0, 0
	for i, e := range endings {
		switch {
		case e.err != nil:
			t.Fatalf("turn %d: %v", i, e.err)
		case e.Reason == "error" && strings.Contains(e.Error, "429"):
			died++
		case e.Reason != "end_turn":
			other++
			t.Logf("turn %d ended %s: %s", i, e.Reason, e.Error)
		}
	}
	log := fake.Log()
	t.Logf("%d turns at once (each %d requests when none is refused) against %d requests/s, retry-after: 1: %d ended with the 429 as their error, %d otherwise unfinished; %d of %d requests refused (429); at most %d requests seen in a second, %d admitted; %d sent before their key's retry-after had passed; wall %v",
		faultTurns, faultRounds+1, faultRate, died, other, log.Count(http.StatusTooManyRequests), len(log),
		log.MaxIn(time.Second), log.Admitted().MaxIn(time.Second), len(log.Early()), wall.Round(10*time.Millisecond))
}

// serveOn is a server whose agent's Anthropic wire goes to url with the
// default retries, as `myelin serve` has it, on an in-memory store and a
// workspace with the no-op tool.
func serveOn(t *testing.T, url string) *fixture {
	p, err := anthropic.New(anthropic.Config{APIKey: "k", BaseURL: url})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	reg := &tool.Registry{}
	if err := reg.Add(tool.MustFunc("noop--run", "Does nothing.", func(context.Context, struct{}) (any, error) { return "ok", nil })); err != nil {
		t.Fatal(err)
	}
	store := &history.Memory{}
	a := &agent.Agent{Provider: p, Store: store, Tools: reg, Env: result.Env{Store: ws}, Model: "claude-test"}
	f := &fixture{t: t, store: store, srv: &Server{Agent: a, Workspace: ws}}
	f.http = httptest.NewServer(f.srv)
	t.Cleanup(func() { f.srv.Close(); f.http.Close() })
	return f
}

// finishOf opens conversation id's events, starts a turn, and returns the
// data of its turn.finished event.
func finishOf(ctx context.Context, f *fixture, id string) (json.RawMessage, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", f.http.URL+"/v1/conversations/"+id+"/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: watching: %w", id, err)
	}
	defer resp.Body.Close()
	sresp, err := http.Post(f.http.URL+"/v1/conversations/"+id+"/turns", "application/json", strings.NewReader(`{"prompt":"go"}`))
	if err != nil {
		return nil, fmt.Errorf("%s: starting the turn: %w", id, err)
	}
	sresp.Body.Close()
	if sresp.StatusCode != http.StatusAccepted {
		return nil, fmt.Errorf("%s: starting the turn: %d", id, sresp.StatusCode)
	}
	r := bufio.NewReader(resp.Body)
	finished := false
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("%s: the events ended before turn.finished: %w", id, err)
		}
		switch {
		case line == "event: turn.finished\n":
			finished = true
		case finished && strings.HasPrefix(line, "data: "):
			return json.RawMessage(line[len("data: "):]), nil
		}
	}
}
