package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
)

// The cache lifetime is stored with the request settings: a resume that
// asks for another says so in the notice, is stored with the answer, and a
// resume with the same one says nothing.
func TestAResumeWithAnotherCacheLifetimeSaysSoAndStoresIt(t *testing.T) {
	r := newRig(t)
	r.srv.Push(providertest.Step{Text: "one"}, providertest.Step{Text: "two"}, providertest.Step{Text: "three"})
	r.turn("first")
	withTTL := func(ttl anthropic.CacheTTL) func(string) (provider.Provider, error) {
		return func(url string) (provider.Provider, error) {
			return anthropic.New(anthropic.Config{APIKey: "k", BaseURL: url, MaxRetries: -1, CacheTTL: ttl})
		}
	}
	notices := func(events []Event) []string {
		var said []string
		for _, e := range events {
			if e.Kind == Notice {
				said = append(said, e.Text)
			}
		}
		return said
	}
	// 5m said aloud is the default: nothing changed, nothing to say
	r.provider = withTTL(anthropic.CacheTTL5m)
	r.agent = r.newAgent()
	if _, events := r.turn("second"); len(notices(events)) > 0 {
		t.Fatalf("asking for 5m, the default, got notices %q", notices(events))
	}
	r.provider = withTTL(anthropic.CacheTTL1h)
	r.agent = r.newAgent()
	_, events := r.turn("third")
	said := strings.Join(notices(events), "\n")
	if !strings.Contains(said, "cached prefix of this conversation will not be reused") || !strings.Contains(said, "the cache lifetime was the provider's default (5m on the Anthropic family) and is now 1h") {
		t.Fatalf("notice %q; want it to say the cache lifetime changed from the default to 1h", said)
	}
	if strings.Contains(said, "the cache settings were") {
		t.Errorf("notice %q names the cache settings, which did not change (the lifetime is its own setting)", said)
	}
	if body := r.srv.Requests()[2]; !strings.Contains(string(body), `"ttl":"1h"`) {
		t.Errorf("the third turn's request carries no ttl 1h: %s", body)
	}
	msgs, err := r.agent.Store.Messages(context.Background(), r.id)
	if err != nil {
		t.Fatal(err)
	}
	var ttls []string
	for _, m := range msgs {
		if m.Settings != nil {
			ttls = append(ttls, "["+m.Settings.CacheTTL+"]")
		}
	}
	if got := strings.Join(ttls, " "); got != "[] [1h]" {
		t.Fatalf("stored cache lifetimes %s; want [] (the first answer's default) then [1h] (the third's), none for the second", got)
	}
}
