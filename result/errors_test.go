package result

import (
	"encoding/json"
	"errors"
	"testing"
)

// What could not be read says what it was, and keeps the decoder's error
// underneath.

func TestAnMCPResultThatIsNotJSONWrapsTheSyntaxError(t *testing.T) {
	_, err := FromMCP([]byte(`{"content": nonsense}`))
	var syntax *json.SyntaxError
	if !errors.As(err, &syntax) {
		t.Errorf("reading a result that is not JSON gave %v, which does not wrap a *json.SyntaxError", err)
	}
}

func TestRawJSONThatIsNotValidWrapsTheSyntaxError(t *testing.T) {
	_, err := JSON(json.RawMessage(`{"a": nonsense}`))
	var syntax *json.SyntaxError
	if !errors.As(err, &syntax) {
		t.Errorf("compacting raw JSON that is not valid gave %v, which does not wrap a *json.SyntaxError", err)
	}
}
