package googlecloud

import (
	"strings"
	"testing"

	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
)

// The one-hour cache through the gateway (which takes the first-party
// body): the body pinned in testdata/request_1h.golden.json, the one-hour
// writes read (providertest.OneHourCache).
func TestTheOneHourCacheOnGoogleCloud(t *testing.T) {
	hermetic(t)
	providertest.OneHourCache(t, wire, "testdata/request_1h.golden.json", *update)
}

// A lifetime the API does not take is refused by New, naming the gateway.
func TestGoogleCloudRefusesAnUnknownCacheLifetime(t *testing.T) {
	hermetic(t)
	_, err := New(Config{Config: anthropic.Config{CacheTTL: "2h"}, Project: "test-project", WorkspaceID: "wrkspc_test", Credentials: staticToken("")})
	if err == nil || !strings.HasPrefix(err.Error(), Name+": ") || !strings.Contains(err.Error(), `"2h"`) {
		t.Fatalf("New with 2h: %v, want an error naming %s and 2h", err, Name)
	}
}
