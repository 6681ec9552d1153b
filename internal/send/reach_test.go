package send

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
)

// hangUp is a loopback listener that accepts each connection, reads a
// little of the request and closes it without an answer.
func hangUp(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = c.Read(make([]byte, 16))
			_ = c.Close()
		}
	}()
	return l.Addr().String()
}

// heard is a context whose retry observer keeps what it hears.
func heard(notices *[]provider.RetryNotice) context.Context {
	return provider.WithRetryNotice(context.Background(), func(n provider.RetryNotice) { *notices = append(*notices, n) })
}

func TestAnUnreachableProviderIsRetriedAloudAndNamedInWords(t *testing.T) {
	addr := providertest.ClosedAddr(t)
	for name, c := range map[string]struct {
		base  string
		words string // the cause, in words
		is    error  // what errors.Is still reaches, when not nil
	}{
		"a closed port":         {"http://" + addr, "connection refused by " + addr, syscall.ECONNREFUSED},
		"a name under .invalid": {"http://myelin-test.invalid:9", "no such host myelin-test.invalid", nil},
	} {
		t.Run(name, func(t *testing.T) {
			var waits []time.Duration
			s := newSender(t, c.base+"/v1/x?key=SECRET", Anthropic(3), &waits)
			var notices []provider.RetryNotice
			_, err := s.Post(heard(&notices), []byte(`{}`))
			if len(notices) != 3 || len(waits) != 3 {
				t.Fatalf("3 retries should be told of before their waits, got %d notices and %d waits", len(notices), len(waits))
			}
			for i, n := range notices {
				if n.Attempt != i+2 || n.Attempts != 4 || n.Wait != waits[i] || !strings.Contains(n.Cause(), c.words) {
					t.Errorf("notice %d: attempt %d of %d in %v (want %d of 4 in %v), cause %q (want it to say %q)", i, n.Attempt, n.Attempts, n.Wait, i+2, waits[i], n.Cause(), c.words)
				}
				if strings.Contains(n.URL, "SECRET") {
					t.Errorf("notice %d shows the query: %q", i, n.URL)
				}
			}
			var ce *provider.ConnectionError
			if !errors.As(err, &ce) {
				t.Fatalf("the error should be a *provider.ConnectionError, got %T: %v", err, err)
			}
			want := "could not reach " + c.base + "/v1/x after 4 attempts: " + c.words
			if !strings.HasPrefix(err.Error(), want) {
				t.Errorf("the error says %q, want it to begin %q", err, want)
			}
			if strings.Contains(err.Error(), "SECRET") {
				t.Errorf("the error shows the URL's query: %q", err)
			}
			if !provider.NeverReached(err) {
				t.Error("NeverReached should hold: no attempt connected")
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("errors.Is(err, %v) should still hold through the error", c.is)
			}
		})
	}
}

func TestAServerThatHangsUpWasReached(t *testing.T) {
	addr := hangUp(t)
	var waits []time.Duration
	s := newSender(t, "http://"+addr, OpenAI(2), &waits)
	var notices []provider.RetryNotice
	_, err := s.Post(heard(&notices), []byte(`{}`))
	if len(notices) != 2 {
		t.Fatalf("2 retries should be told of, got %d", len(notices))
	}
	var ce *provider.ConnectionError
	if !errors.As(err, &ce) || !ce.Reached || ce.Attempts != 3 {
		t.Fatalf("want a *provider.ConnectionError of 3 attempts that says the server was reached, got %T: %v", err, err)
	}
	if provider.NeverReached(err) {
		t.Error("NeverReached should not hold: the connection was made, the request may have been read")
	}
	if w := provider.Words(err); !strings.Contains(w, "the server closed the connection before answering") && !strings.Contains(w, "connection reset") {
		t.Errorf("the cause should say the connection was closed or reset, says %q", w)
	}
	if !strings.Contains(err.Error(), "got no answer from http://"+addr+"/v1/x after 3 attempts") {
		t.Errorf("the error should name the URL and the attempts: %q", err)
	}
}

func TestAnErrorStatusIsToldAsItsStatusAndEndsAsTheWiresError(t *testing.T) {
	hs := httptest.NewServer(&script{answers: []answer{{status: 503, body: "busy"}}})
	defer hs.Close()
	var waits []time.Duration
	s := newSender(t, hs.URL, Anthropic(1), &waits)
	var notices []provider.RetryNotice
	_, err := s.Post(heard(&notices), []byte(`{}`))
	if len(notices) != 1 || notices[0].Cause() != "503 Service Unavailable" {
		t.Fatalf("one retry told of, its cause the status in words: got %+v", notices)
	}
	var r *refused
	if !errors.As(err, &r) || provider.NeverReached(err) {
		t.Errorf("the last answer's error should be the wire's, and the provider reached: %T %v", err, err)
	}
}

func TestAnswersWithoutRetriesTellNothing(t *testing.T) {
	hs := httptest.NewServer(&script{answers: []answer{{status: 200, body: "data: ok\n\n"}}})
	defer hs.Close()
	var waits []time.Duration
	s := newSender(t, hs.URL, Anthropic(3), &waits)
	var notices []provider.RetryNotice
	res, err := s.Post(heard(&notices), []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	closeBody(res)
	if len(notices) != 0 {
		t.Errorf("an answer at once should tell of no retry, got %d", len(notices))
	}
}

// A send of a request some attempts of which were made before it (the
// agent's resend, provider.WithAttemptsBefore) numbers its attempts after
// them, in its notices and its error; what it sends is the same.
func TestASendAfterEarlierAttemptsNumbersItsAttemptsAfterThem(t *testing.T) {
	addr := providertest.ClosedAddr(t)
	var waits []time.Duration
	s := newSender(t, "http://"+addr+"/v1/x", Anthropic(2), &waits)
	var notices []provider.RetryNotice
	_, err := s.Post(provider.WithAttemptsBefore(heard(&notices), 20), []byte(`{}`))
	providertest.CheckAttemptsAfter(t, 20, 2, notices, err)
	if !strings.Contains(fmt.Sprint(err), "after 23 attempts") {
		t.Errorf("the error says %q, want it to count 23 attempts", err)
	}
}
