package send

import (
	"context"
	"errors"
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
