package script

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// An engine whose pipe from myelin ends before the script came says so,
// and keeps the read's error underneath.
func TestAnEngineGivenNoScriptWrapsTheReadsError(t *testing.T) {
	err := serve(strings.NewReader(""), newOutbox(io.Discard), nil)
	if err == nil {
		t.Fatal("an engine given no script gave no error")
	}
	if !errors.Is(err, io.EOF) {
		t.Errorf("the error %q does not wrap io.EOF", err)
	}
}
