package providertest

import (
	"encoding/json"
	"reflect"
	"testing"
)

// DecodesAsEncodingJSON fails t when decode — a wire's scan of a stream
// event, which must read it exactly as encoding/json would — reads data
// otherwise than json.Unmarshal into a zero T: an error where it gives
// none or none where it gives one, or another value. It is the check a
// wire's fuzz target of its scan runs on every input; it is for tests
// only.
func DecodesAsEncodingJSON[T any](t *testing.T, data string, decode func([]byte, *T) error) {
	t.Helper()
	var want, got T
	wantErr := json.Unmarshal([]byte(data), &want)
	gotErr := decode([]byte(data), &got)
	if (wantErr == nil) != (gotErr == nil) {
		t.Fatalf("%q: the scan's error %v, encoding/json's %v", data, gotErr, wantErr)
	}
	if wantErr == nil && !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Fatalf("%q: the scan read\n%s\nencoding/json\n%s", data, g, w)
	}
}
