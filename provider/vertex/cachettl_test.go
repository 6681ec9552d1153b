package vertex

import (
	"strings"
	"testing"

	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
)

// The one-hour cache on Vertex (whose rawPredict takes the Messages API's
// cache_control as it is): the body pinned in
// testdata/request_1h.golden.json, the one-hour writes read
// (providertest.OneHourCache).
func TestTheOneHourCacheOnVertex(t *testing.T) {
	providertest.OneHourCache(t, wire, "testdata/request_1h.golden.json", *update)
}

// A lifetime the API does not take is refused by New, naming Vertex.
func TestVertexRefusesAnUnknownCacheLifetime(t *testing.T) {
	_, err := New(Config{Config: anthropic.Config{CacheTTL: "2h"}, Region: "us-east5", Project: "test-project", Credentials: staticToken("")})
	if err == nil || !strings.HasPrefix(err.Error(), "vertex: ") || !strings.Contains(err.Error(), `"2h"`) {
		t.Fatalf("New with 2h: %v, want an error naming vertex and 2h", err)
	}
}
