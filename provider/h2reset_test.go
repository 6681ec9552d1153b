package provider

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// An answer whose HTTP/2 stream the server resets mid-answer (a proxy's
// RST_STREAM) broke off as a connection reset does over HTTP/1.1: before
// any output it is sent again (Transient), and its words say so. net/http
// gives it as an error of an unexported type, which nothing else
// recognised: the turn failed instead.
func TestAnHTTP2StreamResetMidAnswerIsAStreamThatBrokeOff(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "event: message_start\ndata: {}\n\n")
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // HTTP/2: the stream is reset (INTERNAL_ERROR)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.ProtoMajor != 2 {
		t.Fatalf("the answer came over %s, not HTTP/2", resp.Proto)
	}
	_, readErr := io.ReadAll(resp.Body)
	if readErr == nil {
		t.Fatal("the reset stream read to its end without an error")
	}
	for _, err := range []error{
		readErr,
		fmt.Errorf("anthropic: reading the answer's stream: %w", readErr),
		&WireError{Msg: "bedrock: " + readErr.Error(), Err: fmt.Errorf("decoding: %w", readErr)},
		errors.Join(errors.New("closing the body"), fmt.Errorf("openai: %w", readErr)),
	} {
		if !Transient(err) {
			t.Errorf("Transient(%v) = false, want true: a reset stream is a stream that broke off", err)
		}
		if got := Failure(err); !strings.HasPrefix(got, "the answer's stream broke off: ") {
			t.Errorf("Failure(%v) = %q, want it to say the stream broke off", err, got)
		}
	}
	if other := errors.New("stream error: stream ID 1; INTERNAL_ERROR"); Transient(other) {
		t.Errorf("an error that only reads like a reset is taken for one: %v", other)
	}
}
