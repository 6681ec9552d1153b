package responses

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
)

func TestAToolsSchemaIsKeptCompactedAndAChangedOneIsCompactedAgain(t *testing.T) {
	req := sampleRequest()
	req.Tools[0].InputSchema = json.RawMessage("{\n  \"type\": \"object\"\n}")
	first, err := Body(req, Config{}, false)
	if err != nil {
		t.Fatal(err)
	}
	if b, ok := schemas.m[string(req.Tools[0].InputSchema)]; !ok || string(b) != `{"type":"object"}` {
		t.Fatalf("kept %q, %v", b, ok)
	}
	req.Tools[0].InputSchema = json.RawMessage(`{"type": "object", "properties": {}}`)
	second, _ := Body(req, Config{}, false)
	if string(first) == string(second) || !strings.Contains(string(second), `"parameters":{"type":"object","properties":{}}`) {
		t.Fatalf("after a change:\n%s", second)
	}
	for i := range maxSchemas + 10 {
		if _, err := schemaJSON(json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(schemas.m); n > maxSchemas || n == 0 {
		t.Fatalf("%d schemas kept, at most %d", n, maxSchemas)
	}
}

// Over loopback, a conversation's next body is written into the memory
// of the answered one before it, and every body is Body's.
func TestCompleteWritesTheNextBodyIntoTheAnsweredOnesMemory(t *testing.T) {
	srv := providertest.NewResponses(t)
	p := newProvider(t, srv, Config{})
	providertest.CheckBodiesInPlace(t, srv, p, sampleRequest(), func(req provider.Request) ([]byte, error) {
		return Body(req, p.cfg, true)
	})
}
