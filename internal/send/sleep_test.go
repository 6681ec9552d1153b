package send

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"
)

func TestSleepReturnsTheContextsErrorAtOnceWhenItIsDoneAlready(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// an hour's sleep that returned only when its timer fired would hang
	// the test; a done context must win before any timer is started
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep on a cancelled context = %v, want context.Canceled", err)
	}
}

func TestSleepWaitsItsDurationWhenTheContextStaysOpen(t *testing.T) {
	start := time.Now()
	if err := Sleep(context.Background(), 20*time.Millisecond); err != nil {
		t.Fatalf("Sleep = %v, want nil", err)
	}
	if waited := time.Since(start); waited < 20*time.Millisecond {
		t.Fatalf("Sleep returned after %v, before its 20ms", waited)
	}
}

func TestNoWaitsForTestsMakesSendersRetryWithoutWaitingUntilRestored(t *testing.T) {
	restore := NoWaitsForTests()
	s := New(Target{}, nil, Rules{}, nil)
	restore()
	after := New(Target{}, nil, Rules{}, nil)
	// a day's wait that returns nil within its context's 10 s did not
	// wait (Sleep would return the context's deadline error)
	bounded, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	if err := s.sleep(bounded, 24*time.Hour); err != nil {
		t.Errorf("the no-wait sleep: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.sleep(ctx, 24*time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("the no-wait sleep of a done context: %v, want context.Canceled", err)
	}
	if err := after.sleep(ctx, 24*time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("after restore: %v", err)
	}
	if reflect.ValueOf(after.sleep).Pointer() != reflect.ValueOf(Sleep).Pointer() {
		t.Error("a Sender made after restore does not wait with Sleep")
	}
}

// Nested, an inner restore gives back the outer no-wait, not the real
// wait: a helper that turns waits off inside a test that did already
// must not turn them back on for the rest of that test.
func TestNoWaitsForTestsRestoresThePreviousSetting(t *testing.T) {
	outer := NoWaitsForTests()
	inner := NoWaitsForTests()
	inner()
	s := New(Target{}, nil, Rules{}, nil)
	outer()
	after := New(Target{}, nil, Rules{}, nil)
	if reflect.ValueOf(s.sleep).Pointer() == reflect.ValueOf(Sleep).Pointer() {
		t.Error("after the inner restore a Sender waits with Sleep: the outer no-wait is lost")
	}
	if reflect.ValueOf(after.sleep).Pointer() != reflect.ValueOf(Sleep).Pointer() {
		t.Error("after the outer restore a Sender does not wait with Sleep")
	}
}
