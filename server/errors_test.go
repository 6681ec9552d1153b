package server

import (
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
)

// A request body that is not JSON is refused in words, with the decoder's
// error underneath.
func TestARequestBodyThatIsNotJSONWrapsTheSyntaxError(t *testing.T) {
	r := httptest.NewRequest("POST", "/v1/conversations", strings.NewReader(`{"a": nonsense}`))
	var v map[string]any
	err := readJSON(r, &v)
	var syntax *json.SyntaxError
	if !errors.As(err, &syntax) {
		t.Errorf("reading a body that is not JSON gave %v, which does not wrap a *json.SyntaxError", err)
	}
}
