package ratelimit

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestIdentityIsAShortHashNeverTheKey(t *testing.T) {
	key := "sk-ant-api03-fixture-not-a-real-key-0123456789"
	id := Identity(key)
	if !regexp.MustCompile(`^k:[0-9a-f]{12}$`).MatchString(id) {
		t.Errorf("Identity = %q, want k: and 12 hex digits", id)
	}
	if strings.Contains(id, key[:8]) || strings.Contains(Key{Endpoint: "api.anthropic.com", Identity: id, Model: "m"}.String(), key) {
		t.Errorf("Identity %q shows part of the key", id)
	}
	if Identity(key) != id {
		t.Errorf("Identity of the same key differs between calls: %q, %q", id, Identity(key))
	}
	if other := Identity(key + "x"); other == id {
		t.Errorf("two keys have the same identity %q", id)
	}
	if got := Identity(""); got != "" {
		t.Errorf("Identity(\"\") = %q, want \"\" (no key)", got)
	}
}

func TestNextTakesRetryAfterThenSpentDimensionsThenNow(t *testing.T) {
	spent := func(reset time.Time) Dimension { return Dimension{HasRemaining: true, Reset: reset} }
	for _, tc := range []struct {
		name  string
		o     Observation
		asked time.Time
		next  time.Time
	}{
		{"nothing said", Observation{}, now, now},
		{"retry-after counts from the response", Observation{At: now, RetryAfter: 20 * time.Second}, at(5), at(20)},
		{"retry-after past by the time it is asked", Observation{At: now, RetryAfter: 20 * time.Second}, at(30), at(30)},
		{"retry-after without a time counts from now", Observation{RetryAfter: 20 * time.Second}, at(5), at(25)},
		{"retry-after wins over a later reset", Observation{At: now, RetryAfter: 2 * time.Second, Requests: spent(at(50))}, now, at(2)},
		{"retry-after wins over an earlier reset", Observation{At: now, RetryAfter: 30 * time.Second, Tokens: spent(at(5))}, now, at(30)},
		{"the latest spent reset", Observation{At: now, Requests: spent(at(5)), InputTokens: spent(at(9)), OutputTokens: spent(at(3))}, now, at(9)},
		{"a reset with some left is no wait", Observation{At: now, Tokens: Dimension{Remaining: 1, HasRemaining: true, Reset: at(50)}}, now, now},
		{"a reset with the remaining unknown is no wait", Observation{At: now, Tokens: Dimension{Limit: 5, HasLimit: true, Reset: at(50)}}, now, now},
		{"a spent dimension without a reset is no wait", Observation{At: now, Requests: spent(time.Time{})}, now, now},
		{"a 429 without a time is the retry policy's", Observation{At: now, Status: 429, Limited: true}, now, now},
		{"a hand-built wait beyond MaxWait", Observation{At: now, RetryAfter: 1000 * time.Hour}, now, now.Add(MaxWait)},
		{"a hand-built reset beyond MaxWait", Observation{At: now, Requests: spent(now.Add(1000 * time.Hour))}, now, now.Add(MaxWait)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.o.Next(tc.asked); !got.Equal(tc.next) {
				t.Errorf("Next(%v) = %v, want %v", tc.asked, got, tc.next)
			}
			if got, want := tc.o.Wait(tc.asked), tc.next.Sub(tc.asked); got != want {
				t.Errorf("Wait(%v) = %v, want %v", tc.asked, got, want)
			}
		})
	}
}

func TestWhySaysTheRefusalAndTheWaitInWords(t *testing.T) {
	for _, tc := range []struct {
		o   Observation
		why string
	}{
		{Observation{}, ""},
		{Observation{From: "api.anthropic.com", Status: 429, Limited: true, RetryAfter: 20 * time.Second},
			"429 from api.anthropic.com: retry after 20s"},
		{Observation{From: "api.openai.com", Status: 200, RetryAfter: 250 * time.Millisecond},
			"retry after 250ms from api.openai.com"},
		{Observation{Status: 503, Overloaded: true}, "503 from the provider, overloaded"},
		{Observation{From: "anthropic", Status: 429, Limited: true, RetryAfter: 1234567 * time.Microsecond,
			Requests: Dimension{HasRemaining: true, Reset: at(5)}},
			"429 from anthropic: retry after 1.2s"},
		{Observation{From: "anthropic", Requests: Dimension{Limit: 50, HasLimit: true, HasRemaining: true, Reset: at(5)}},
			"requests: 0 of 50 left until 12:00:05 UTC"},
		{Observation{From: "anthropic", OutputTokens: Dimension{HasRemaining: true}},
			"output tokens: 0 left"},
		{Observation{From: "anthropic", Tokens: Dimension{Limit: 50, Remaining: 3, HasLimit: true, HasRemaining: true, Reset: at(5)}}, ""},
	} {
		if got := tc.o.Why(); got != tc.why {
			t.Errorf("Why of %+v = %q, want %q", tc.o, got, tc.why)
		}
	}
}
