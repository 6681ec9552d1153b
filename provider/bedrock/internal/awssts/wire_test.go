package awssts

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTheDefaultBackoffIsTheSDKsStandardOne pins the SDK's standard
// backoff: a random wait under 2^attempt seconds, 20 s from attempt 5.
func TestTheDefaultBackoffIsTheSDKsStandardOne(t *testing.T) {
	var c Client
	for attempt := 1; attempt <= 4; attempt++ {
		limit := time.Duration(1<<attempt) * time.Second
		var longest time.Duration
		for range 200 {
			d := c.backoff(attempt)
			if d < 0 || d >= limit {
				t.Fatalf("attempt %d: waits %v, not in [0, %v)", attempt, d, limit)
			}
			longest = max(longest, d)
		}
		if longest < limit/4 {
			t.Errorf("attempt %d: 200 waits all under %v: not spread up to %v", attempt, limit/4, limit)
		}
	}
	for _, attempt := range []int{5, 6, 30} {
		if d := c.backoff(attempt); d != 20*time.Second {
			t.Errorf("attempt %d: waits %v, want 20s", attempt, d)
		}
	}
	c.Backoff = func(int) time.Duration { return 7 }
	if d := c.backoff(1); d != 7 {
		t.Errorf("with Backoff set: waits %v, want its 7ns", d)
	}
}

// TestAnEndpointThatIsNotAURLFailsAtOnce pins that a provider given no
// absolute endpoint says so and sends nothing (the SDK's client would
// try, fail to send and retry).
func TestAnEndpointThatIsNotAURLFailsAtOnce(t *testing.T) {
	for _, endpoint := range []string{"", "sts.us-east-1.amazonaws.com", "/just/a/path", "::"} {
		p := NewWebIdentity(Client{Endpoint: endpoint, HTTPClient: &http.Client{Transport: noTransport{t}}},
			WebIdentityOptions{RoleARN: "arn:aws:iam::1:role/r", TokenFile: writeToken(t)})
		_, err := p.Retrieve(context.Background())
		if err == nil || !strings.Contains(err.Error(), "STS endpoint") {
			t.Errorf("endpoint %q: error %v, want one about the STS endpoint", endpoint, err)
		}
	}
}

// noTransport fails the test if anything is sent.
type noTransport struct{ t *testing.T }

func (n noTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	n.t.Errorf("sent %s %s", r.Method, r.URL)
	return nil, errors.New("nothing may be sent")
}

func writeToken(t *testing.T) string {
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("token"), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}
