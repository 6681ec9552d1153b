package bedrock

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
)

// What Bedrock receives with the one-hour cache, pinned: the default body
// with "ttl":"1h" in each cache_control, nothing else changed (Bedrock's
// InvokeModel takes the Messages API's cache_control as it is).
func TestTheBodyBedrockReceivesWithTheOneHourCacheIsPinned(t *testing.T) {
	srv := providertest.NewBedrock(t, providertest.Step{Text: "ok"}, providertest.Step{Text: "ok"})
	_, client := record(t, srv)
	for _, ttl := range []anthropic.CacheTTL{"", anthropic.CacheTTL1h} {
		p, err := New(Config{Config: anthropic.Config{HTTPClient: client, MaxRetries: 3, CacheTTL: ttl}, AWS: &aws.Config{Region: "us-east-1", Credentials: staticKeys}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Complete(context.Background(), providertest.SampleRequest(), nil); err != nil {
			t.Fatal(err)
		}
	}
	def, got := srv.Requests()[0], srv.Requests()[1]
	providertest.Golden(t, "testdata/request_1h.golden.json", got, *update)
	want := strings.ReplaceAll(string(def), `"cache_control":{"type":"ephemeral"}`, `"cache_control":{"ttl":"1h","type":"ephemeral"}`)
	if string(got) != want || want == string(def) {
		t.Fatalf("the one-hour body is not the default's with a ttl on each marker:\n got %s\nwant %s", got, want)
	}
}

// A lifetime the API does not take is refused by New, naming Bedrock.
func TestBedrockRefusesAnUnknownCacheLifetime(t *testing.T) {
	_, err := New(Config{Config: anthropic.Config{CacheTTL: "2h"}, AWS: &aws.Config{Region: "us-east-1", Credentials: staticKeys}})
	if err == nil || !strings.HasPrefix(err.Error(), "bedrock: ") || !strings.Contains(err.Error(), `"2h"`) {
		t.Fatalf("New with 2h: %v, want an error naming bedrock and 2h", err)
	}
}

// The one-hour cache writes the answer reports are read into
// history.Usage.CacheWrite1h, streamed and whole.
func TestTheOneHourCacheWritesAreReadOnBedrock(t *testing.T) {
	for _, noStream := range []bool{false, true} {
		srv := providertest.NewBedrock(t, providertest.Step{Text: "ok", Input: 3, Output: 2, CacheRead: 10, CacheWrite: 9, CacheWrite1h: 5})
		_, client := record(t, srv)
		p, err := New(Config{Config: anthropic.Config{HTTPClient: client, NoStream: noStream, MaxRetries: 3, CacheTTL: anthropic.CacheTTL1h}, AWS: &aws.Config{Region: "us-east-1", Credentials: staticKeys}})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := p.Complete(context.Background(), providertest.SampleRequest(), nil)
		if err != nil {
			t.Fatal(err)
		}
		want := history.Usage{Input: 3, Output: 2, CacheRead: 10, CacheWrite: 9, CacheWrite1h: 5}
		if u := resp.Message.Usage; u == nil || *u != want {
			t.Errorf("noStream %v: usage %+v, want %+v", noStream, u, want)
		}
	}
}
