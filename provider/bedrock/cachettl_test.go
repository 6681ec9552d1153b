package bedrock

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
)

// The one-hour cache on Bedrock (whose InvokeModel takes the Messages
// API's cache_control as it is): the body pinned in
// testdata/request_1h.golden.json, the one-hour writes read
// (providertest.OneHourCache).
func TestTheOneHourCacheOnBedrock(t *testing.T) {
	providertest.OneHourCache(t, wire, "testdata/request_1h.golden.json", *update)
}

// A lifetime the API does not take is refused by New, naming Bedrock.
func TestBedrockRefusesAnUnknownCacheLifetime(t *testing.T) {
	_, err := New(Config{Config: anthropic.Config{CacheTTL: "2h"}, AWS: &aws.Config{Region: "us-east-1", Credentials: staticKeys}})
	if err == nil || !strings.HasPrefix(err.Error(), "bedrock: ") || !strings.Contains(err.Error(), `"2h"`) {
		t.Fatalf("New with 2h: %v, want an error naming bedrock and 2h", err)
	}
}
