package awslogin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestTwoProcessesRefreshingLeaveAReadableCache: two providers (two
// processes: each has its own mutex) find the same cache expired and
// refresh at once; the sign-in service answers each with a session token
// of its own length (STS session tokens vary). The cache must be
// readable afterwards, and a reader in between must never see a torn
// file (review rev-aws3 finding 4: save truncated and wrote in place).
func TestTwoProcessesRefreshingLeaveAReadableCache(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"accessToken":{"accessKeyId":"ASIA%d","secretAccessKey":"s","sessionToken":"%s"},"expiresIn":900,"refreshToken":"r%d","tokenType":"aws_sigv4"}`,
			i, strings.Repeat("t", 1000+int(i%7)*37), i)
	}))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "cache.json")
	expired := fixture(t, "expired.json")
	const rounds = 100
	var torn, readerTorn int
	for iter := 0; iter < rounds; iter++ {
		if err := os.WriteFile(path, expired, 0o600); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		stop := make(chan struct{})
		var seenTorn atomic.Bool
		go func() { // a third process reading the cache meanwhile
			for {
				select {
				case <-stop:
					return
				default:
				}
				if b, err := os.ReadFile(path); err == nil && !json.Valid(b) {
					seenTorn.Store(true)
				}
			}
		}()
		for g := 0; g < 2; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p := New(Client{HTTPClient: srv.Client(), Endpoint: srv.URL, Backoff: func(int) time.Duration { return 0 }}, path, Options{RestrictPermissions: true})
				<-start
				_, _ = p.Retrieve(context.Background())
			}()
		}
		close(start)
		wg.Wait()
		close(stop)
		if seenTorn.Load() {
			readerTorn++
		}
		b, _ := os.ReadFile(path)
		if !json.Valid(b) {
			torn++
		}
	}
	if torn > 0 || readerTorn > 0 {
		t.Errorf("of %d concurrent refreshes: %d left the cache file unreadable; in %d a reader saw a torn or empty file", rounds, torn, readerTorn)
	}
}
