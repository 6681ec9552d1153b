package tool

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
)

// An input that is not JSON is refused in words, with the decoder's error
// underneath.
func TestAnInputThatIsNotJSONWrapsTheSyntaxError(t *testing.T) {
	type in struct {
		A int `json:"a"`
	}
	tl, err := Func("t", "a tool", func(context.Context, in) (any, error) { return nil, nil })
	if err != nil {
		t.Fatal(err)
	}
	err = tl.validate(json.RawMessage(`{"a": nonsense}`))
	var syntax *json.SyntaxError
	if !errors.As(err, &syntax) {
		t.Errorf("validating an input that is not JSON gave %v, which does not wrap a *json.SyntaxError", err)
	}
}
