package anthropic

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
)

func TestAProviderSendsTheHeadOfEachRequestAsBuiltAfreshWhateverChanged(t *testing.T) {
	schema := []byte(`{"type":"object","properties":{"path":{"type":"string"}}}`)
	base := providertest.SampleRequest()
	base.Tools = append([]provider.Tool{{Name: "mine", Description: "Mine.", InputSchema: json.RawMessage(schema)}}, base.Tools...)
	with := func(edit func(*provider.Request)) func() provider.Request {
		return func() provider.Request {
			r := base
			r.Tools = append([]provider.Tool(nil), base.Tools...)
			edit(&r)
			return r
		}
	}
	budget := Thinking{Budget: 1024}
	steps := []struct {
		name string
		req  func() provider.Request
		th   Thinking
	}{
		{"first", with(func(*provider.Request) {}), Thinking{}},
		{"the same again", with(func(*provider.Request) {}), Thinking{}},
		// the caller reuses the schema's bytes: the cache's copy must not follow
		{"schema edited in place", with(func(*provider.Request) { copy(schema[len(`{"type":"`):], "thing ") }), Thinking{}},
		{"system changed", with(func(r *provider.Request) { r.System = "You are verbose." }), Thinking{}},
		{"no system", with(func(r *provider.Request) { r.System = "" }), Thinking{}},
		{"description changed", with(func(r *provider.Request) { r.Tools[1].Description = "Read a file <fast>." }), Thinking{}},
		{"tool renamed", with(func(r *provider.Request) { r.Tools[2].Name = "workspace--put" }), Thinking{}},
		{"a tool fewer", with(func(r *provider.Request) { r.Tools = r.Tools[:2] }), Thinking{}},
		{"no tools", with(func(r *provider.Request) { r.Tools = nil }), Thinking{}},
		{"no schema", with(func(r *provider.Request) { r.Tools[0].InputSchema = nil }), Thinking{}},
		{"a schema with spaces", with(func(r *provider.Request) { r.Tools[0].InputSchema = json.RawMessage(`{ "type": "object" }`) }), Thinking{}},
		{"model changed", with(func(r *provider.Request) { r.Model = "claude-other" }), Thinking{}},
		{"max_tokens changed", with(func(r *provider.Request) { r.MaxTokens = 4096 }), Thinking{}},
		{"thinking on", with(func(r *provider.Request) { r.MaxTokens = 4096 }), budget},
		{"thinking adaptive", with(func(r *provider.Request) { r.MaxTokens = 4096 }), Thinking{Adaptive: true, Display: "summarized"}},
		{"back to the first", with(func(*provider.Request) {}), Thinking{}},
	}
	srv := providertest.NewAnthropic(t)
	p := newProvider(t, srv, false)
	for i, s := range steps {
		srv.Push(providertest.Step{Text: "ok"})
		q := p
		if s.th.On() {
			var err error
			if q, err = p.WithThinking(s.th); err != nil {
				t.Fatal(err)
			}
		}
		req := s.req()
		if _, err := q.Complete(context.Background(), req, nil); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		want, err := BodyWith(req, true, s.th)
		if err != nil {
			t.Fatal(err)
		}
		if got := srv.Requests()[i]; string(got) != string(want) {
			t.Errorf("%s: sent\n%s\nwant\n%s", s.name, got, want)
		}
	}
}

func TestRequestsWithDifferentHeadsAtOnceEachSendTheirOwn(t *testing.T) {
	reqs := []provider.Request{providertest.SampleRequest(), providertest.SampleRequest()}
	reqs[1].System = "You are verbose."
	reqs[1].Tools = reqs[1].Tools[:1]
	srv := providertest.NewAnthropic(t)
	for range 40 {
		srv.Push(providertest.Step{Text: "ok"})
	}
	p := newProvider(t, srv, false)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				if _, err := p.Complete(context.Background(), reqs[(g+i)%2], nil); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	got := map[string]int{}
	for _, b := range srv.Requests() {
		got[string(b)]++
	}
	if len(got) != 2 || got[string(mustJSONBody(t, reqs[0]))] != 20 || got[string(mustJSONBody(t, reqs[1]))] != 20 {
		t.Fatalf("sent %d distinct bodies, %v; want each of 2 twenty times", len(got), counts(got))
	}
}

func mustJSONBody(t *testing.T, r provider.Request) []byte {
	t.Helper()
	b, err := BodyWith(r, true, Thinking{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func counts(m map[string]int) []int {
	var n []int
	for _, c := range m {
		n = append(n, c)
	}
	return n
}
