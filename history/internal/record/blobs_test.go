package record

import (
	"strings"
	"testing"
)

func TestAFileOverMaxBlobIsRefusedBeforeAnythingIsRead(t *testing.T) {
	err := CheckBlob("keeping file f of conversation c", "c", "f", MaxBlob+1)
	if err == nil || !strings.Contains(err.Error(), "over the") || !strings.Contains(err.Error(), "keeping file f") {
		t.Fatalf("CheckBlob of MaxBlob+1 bytes: %v; want an error naming the file and the bound", err)
	}
	if err := CheckBlob("x", "c", "f", MaxBlob); err != nil {
		t.Fatalf("CheckBlob of MaxBlob bytes: %v; want none", err)
	}
}
