package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/sqlite"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/tool"
)

// BenchmarkResumeRun is a fresh `myelin run --conversation ID` on a stored
// conversation of 10k and 100k messages (an answer with a tool call and
// its result, over and over; a window large enough that nothing is taken
// out), from the process's start to the first byte of its request at a
// fake provider on loopback (total-ms), and the part of it after main
// began (after-main-ms: total less the package inits GODEBUG=inittrace
// reports, which end before main). "resumed" runs with the resume point
// the run before kept; "cold" with it deleted before each run, as every
// restart was before resume points (agent/resume.go). Run:
//
//	go test ./cmd/myelin -run '^$' -bench ResumeRun -count 3
func BenchmarkResumeRun(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "myelin")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	for _, n := range []int{10000, 100000} {
		dir, home := b.TempDir(), b.TempDir()
		id := storedRounds(b, filepath.Join(dir, ".myelin", "history.db"), n)
		srv := providertest.NewAnthropic(b)
		target, _ := url.Parse(srv.URL)
		proxy := httputil.NewSingleHostReverseProxy(target)
		var arrived atomic.Int64 // when the run's first request reached the fake
		front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			arrived.CompareAndSwap(0, time.Now().UnixNano())
			proxy.ServeHTTP(w, r)
		}))
		b.Cleanup(front.Close)
		env := append(os.Environ(), "HOME="+home, "ANTHROPIC_API_KEY=k", "ANTHROPIC_BASE_URL="+front.URL, "OPENAI_API_KEY=", "GODEBUG=inittrace=1")
		// run starts one run and returns when its request reached the
		// fake, after main began, and the run's stderr
		run := func(b *testing.B) (total, inits time.Duration) {
			srv.Push(providertest.Step{Text: "ok"})
			arrived.Store(0)
			cmd := exec.Command(bin, "run", "--workspace", dir, "--conversation", id, "--context-window", "100000000", "go on")
			cmd.Env = env
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			start := time.Now()
			if err := cmd.Run(); err != nil {
				b.Fatalf("myelin run: %v\n%s", err, stderrTail(stderr.Bytes()))
			}
			at := arrived.Load()
			if at == 0 {
				b.Fatal("the run sent no request")
			}
			return time.Duration(at - start.UnixNano()), initsEnd(stderr.Bytes())
		}
		b.StopTimer()
		run(b) // keeps a resume point of the conversation as it now stands
		b.StartTimer()
		for _, mode := range []string{"resumed", "cold"} {
			b.Run(fmt.Sprintf("%dk-messages/%s", n/1000, mode), func(b *testing.B) {
				var total, inits time.Duration
				for b.Loop() {
					if mode == "cold" {
						b.StopTimer()
						dropResumePoints(b, filepath.Join(dir, ".myelin", "history.db"))
						b.StartTimer()
					}
					t, i := run(b)
					total, inits = total+t, inits+i
				}
				ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
				b.ReportMetric(ms(total), "total-ms/op")
				b.ReportMetric(ms(total-inits), "after-main-ms/op")
			})
		}
	}
}

// storedRounds makes, in the store at path, a conversation of n messages
// whose turn has ended, and returns its id.
func storedRounds(b testing.TB, path string, n int) string {
	ctx := context.Background()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		b.Fatal(err)
	}
	store, err := sqlite.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	id, err := (&agent.Agent{Store: store, Tools: &tool.Registry{}, Model: "m"}).NewConversation(ctx)
	if err != nil {
		b.Fatal(err)
	}
	batch := []history.Message{{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "read the files"}}}}
	for i := 0; i < n-2; i += 2 {
		batch = append(batch,
			history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: "Let me read the next file."},
				{Type: history.ToolCallPart, CallID: fmt.Sprintf("toolu_%d", i), Name: "workspace--read", Input: json.RawMessage(`{"path":"src/main.go"}`)}}},
			history.Message{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: fmt.Sprintf("toolu_%d", i),
				Text: "     1\tpackage main\n     2\t\n     3\tfunc main() {}\n[lines 1-3 of 3 in src/main.go; end of file]"}}})
		if len(batch) >= 1000 {
			if err := store.Append(ctx, id, batch...); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	batch = append(batch, history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: "done"}}})
	if err := store.Append(ctx, id, batch...); err != nil {
		b.Fatal(err)
	}
	return id
}

// dropResumePoints deletes every resume point of the store at path.
func dropResumePoints(b *testing.B, path string) {
	db, err := sql.Open("sqlite", path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{`DELETE FROM resume_points`, `DELETE FROM resume_chunks`} {
		if _, err := db.Exec(q); err != nil {
			b.Fatal(err)
		}
	}
}

// initLine is a line GODEBUG=inittrace=1 writes for a package's init:
// when it began, from the process's start, and how long it took.
var initLine = regexp.MustCompile(`^init \S+ @([0-9.]+) ms, ([0-9.]+) ms clock`)

// initsEnd is when the last package init ended, from the process's start:
// main begins right after.
func initsEnd(stderr []byte) time.Duration {
	var end float64
	sc := bufio.NewScanner(bytes.NewReader(stderr))
	for sc.Scan() {
		m := initLine.FindSubmatch(sc.Bytes())
		if m == nil {
			continue
		}
		at, _ := strconv.ParseFloat(string(m[1]), 64)
		took, _ := strconv.ParseFloat(string(m[2]), 64)
		end = max(end, at+took)
	}
	return time.Duration(end * float64(time.Millisecond))
}

// stderrTail is the end of a run's stderr, for a failure's message.
func stderrTail(b []byte) []byte {
	if len(b) > 2000 {
		return b[len(b)-2000:]
	}
	return b
}
