package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/sqlite"
	"github.com/myelin-run/myelin/provider/providertest"
)

// canDelete reports whether the workspace's default store deletes
// conversations (history.Deleter).
func canDelete(t *testing.T, dir string) bool {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(dir, ".myelin", "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, ok := any(st).(history.Deleter)
	return ok
}

// oneRetry makes the wires retry once (not 4 times, waiting seconds).
func oneRetry(t *testing.T) {
	old := retries
	retries = 1
	t.Cleanup(func() { retries = old })
}

func TestRunAgainstAnUnreachableProviderSaysWhatItRetriesAndStoresNothing(t *testing.T) {
	dir := workspaceWith(t, nil)
	addr := providertest.ClosedAddr(t)
	t.Setenv("ANTHROPIC_API_KEY", "test-key")
	t.Setenv("ANTHROPIC_BASE_URL", "http://"+addr)
	t.Setenv("OPENAI_API_KEY", "")
	oneRetry(t)
	_, errOut, code := cli(t, "run", "--workspace", dir, "hi")
	if code != exitError {
		t.Fatalf("exit %d, want %d: %s", code, exitError, errOut)
	}
	retry := "myelin: retrying anthropic request (attempt 2 of 2) in "
	if strings.Count(errOut, retry) != 1 || !strings.Contains(errOut, "s: connection refused by "+addr+"\n") {
		t.Errorf("stderr should say once what is retried and why (%q ... connection refused by %s):\n%s", retry, addr, errOut)
	}
	want := "myelin: anthropic: could not reach http://" + addr + "/v1/messages after 2 attempts: connection refused by " + addr + "\n"
	if !strings.Contains(errOut, want) {
		t.Errorf("stderr should end with the URL and the cause, %q:\n%s", want, errOut)
	}
	if !canDelete(t, dir) {
		t.Skip("the SQLite store does not delete conversations (history.Deleter) on this branch")
	}
	if !strings.HasSuffix(errOut, "myelin: nothing was stored: the provider was never reached\n") {
		t.Errorf("stderr should end saying nothing was stored:\n%s", errOut)
	}
	out, _, code := cli(t, "history", "list", "--workspace", dir)
	if code != 0 || strings.Contains(out, "\t") { // a conversation is listed as tab-separated fields
		t.Errorf("history list: exit %d, %q: want no conversation listed", code, out)
	}
}

// syncBuffer is a bytes.Buffer safe to write from one goroutine and read
// from another.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestChatAfterAFirstTurnThatNeverReachedTheProviderGoesOnInTheSameConversation(t *testing.T) {
	dir := workspaceWith(t, nil)
	if !canDelete(t, dir) {
		t.Skip("the SQLite store does not delete conversations (history.Deleter) on this branch")
	}
	srv := providertest.NewAnthropic(t, providertest.Step{Text: "two"})
	addr := providertest.ClosedAddr(t)
	t.Setenv("ANTHROPIC_API_KEY", "test-key")
	t.Setenv("ANTHROPIC_BASE_URL", "http://"+addr)
	t.Setenv("OPENAI_API_KEY", "")
	oneRetry(t)
	in, feed := io.Pipe()
	var out, errOut syncBuffer
	code := make(chan int, 1)
	go func() { code <- run(context.Background(), []string{"chat", "--workspace", dir}, in, &out, &errOut) }()
	_, _ = io.WriteString(feed, "first\n")
	for deadline := time.Now().Add(time.Minute); !strings.Contains(errOut.String(), "nothing was stored"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the first turn never said nothing was stored:\n%s", errOut.String())
		}
	}
	// the provider is reachable now, at the same address
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	target, _ := url.Parse(srv.URL)
	proxy := &http.Server{Handler: httputil.NewSingleHostReverseProxy(target)}
	go func() { _ = proxy.Serve(l) }()
	defer proxy.Close()
	_, _ = io.WriteString(feed, "second\n/exit\n")
	_ = feed.Close()
	if c := <-code; c != 0 || out.String() != "two\n" {
		t.Fatalf("exit %d, stdout %q, want 0 and the second turn's answer; stderr:\n%s", c, out.String(), errOut.String())
	}
	id := conversationID(t, errOut.String())
	list, _, _ := cli(t, "history", "list", "--workspace", dir)
	if !strings.HasPrefix(list, id+"\t") || !strings.Contains(list, "\t2 messages\tsecond") || strings.Count(list, "\n") != 1 {
		t.Errorf("history list should show the one conversation, with the second turn alone:\n%s", list)
	}
}
