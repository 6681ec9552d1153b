package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/sqlite"
	"github.com/myelin-run/myelin/history/storetest"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/tool"
)

// BenchmarkResumeRun is issue 34 point 4 (docs/performance.md "Resuming a
// stored conversation"): a fresh `myelin run --conversation ID` on a
// stored conversation of 10k and 100k messages (an answer with a tool call
// and its result, over and over; a window large enough that nothing is
// taken out), and of 100k messages all but the last 1k of which a summary
// record stands for (the mark the running agent's first turn sets lets a
// resume read those only), from the process's start to its request reaching a fake
// provider on loopback (resumed-ms), side by side in every iteration with
// its two floors:
//
//   - version-ms: `myelin version` of the same binary, start to exit: the
//     cold start alone, which no resume can go under;
//   - running-ms: a running agent's next request of the same conversation
//     (agent.Turn in this process on a store that has read it before),
//     from the turn's start to its request reaching the fake.
//
// It also reports the part of a resume after main began (after-main-ms:
// a second resume in the same iteration, run with GODEBUG=inittrace=1,
// less the package inits it reports, which end before main — not the
// first's: the trace writes a line a package, some 340 writes to a pipe,
// which added 3–4 ms to the figure it was taken from), and the CPU time,
// user and system, of the whole run, start to exit (resumed-cpu-ms: on a
// loaded machine the steadier figure). With
// MYELIN_RESUME_BEFORE=PATH it runs that binary too
// (an older build) on the same conversation in every iteration, before
// this one's resume in every other iteration and after it in the rest,
// for a before/after (before-ms). Each figure is the median of the iterations.
// Run:
//
//	MYELIN_RESUME_BEFORE=/path/to/old/myelin \
//	go test ./cmd/myelin -run '^$' -bench ResumeRun -benchtime 10x
func BenchmarkResumeRun(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "myelin")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	for _, c := range []struct{ n, kept int }{{10000, 0}, {100000, 0}, {100000, 1000}} {
		name := fmt.Sprintf("%dk-messages", c.n/1000)
		if c.kept > 0 {
			name += fmt.Sprintf("-summarised-to-%dk", c.kept/1000)
		}
		n := c.n
		b.Run(name, func(b *testing.B) {
			dir, home := b.TempDir(), b.TempDir()
			path := filepath.Join(dir, ".myelin", "history.db")
			id := storedRounds(b, path, n)
			if c.kept > 0 {
				summarised(b, path, id, n, c.kept)
			}
			srv := providertest.NewAnthropic(b)
			target, _ := url.Parse(srv.URL)
			proxy := httputil.NewSingleHostReverseProxy(target)
			var arrived atomic.Int64 // when a request first reached the fake
			front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				arrived.CompareAndSwap(0, time.Now().UnixNano())
				proxy.ServeHTTP(w, r)
			}))
			b.Cleanup(front.Close)
			env := append(os.Environ(), "HOME="+home, "ANTHROPIC_API_KEY=k", "ANTHROPIC_BASE_URL="+front.URL, "OPENAI_API_KEY=")
			traced := append(slices.Clip(env), "GODEBUG=inittrace=1")
			// resume runs bin on the conversation; with env traced, inits
			// is when its package inits ended, else 0
			resume := func(bin string, env []string) (total, inits, cpu time.Duration) {
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
				return time.Duration(at - start.UnixNano()), initsEnd(stderr.Bytes()), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
			}
			version := func() time.Duration {
				cmd := exec.Command(bin, "version")
				cmd.Env = env
				start := time.Now()
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("myelin version: %v\n%s", err, out)
				}
				return time.Since(start)
			}
			// the running agent: its own handle on the store, which has
			// read the conversation (its first turn)
			store, err := sqlite.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { store.Close() })
			wire, err := anthropic.New(anthropic.Config{APIKey: "k", BaseURL: front.URL})
			if err != nil {
				b.Fatal(err)
			}
			running := &agent.Agent{Provider: wire, Store: store, Tools: &tool.Registry{}, Model: "claude-sonnet-4-5", ContextWindow: 100000000}
			next := func() time.Duration {
				srv.Push(providertest.Step{Text: "ok"})
				arrived.Store(0)
				start := time.Now()
				if _, err := running.Turn(context.Background(), id, "go on", nil); err != nil {
					b.Fatal("the running agent's turn: ", err)
				}
				return time.Duration(arrived.Load() - start.UnixNano())
			}
			before := os.Getenv("MYELIN_RESUME_BEFORE")
			next()
			// the running agent's turn set the mark a resume reads from,
			// its view packed (agent/pack.go)
			if m, _, err := history.ReadMarked(context.Background(), store, id); err != nil || m.From == 0 {
				b.Fatalf("the conversation's mark after a turn: from %d, %v; want one past place 0", m.From, err)
			}
			resume(bin, env)
			var resumed, afterMain, cpus, versions, runs, befores, beforeCPUs []time.Duration
			older := func() {
				if before != "" {
					t, _, cpu := resume(before, env)
					befores, beforeCPUs = append(befores, t), append(beforeCPUs, cpu)
				}
			}
			for n := 0; b.Loop(); n++ {
				// the two builds take turns at going first: what runs
				// right after the running agent's turn, or another
				// resume, is not always the same one
				if n%2 == 1 {
					older()
				}
				t, _, cpu := resume(bin, env)
				resumed, cpus = append(resumed, t), append(cpus, cpu)
				t, i, _ := resume(bin, traced)
				afterMain = append(afterMain, t-i)
				if n%2 == 0 {
					older()
				}
				versions = append(versions, version())
				runs = append(runs, next())
				srv.Forget()
			}
			if before != "" {
				b.ReportMetric(medianMs(befores), "before-ms")
				b.ReportMetric(medianMs(beforeCPUs), "before-cpu-ms")
			}
			b.ReportMetric(medianMs(cpus), "resumed-cpu-ms")
			b.ReportMetric(medianMs(resumed), "resumed-ms")
			b.ReportMetric(medianMs(afterMain), "after-main-ms")
			b.ReportMetric(medianMs(versions), "version-ms")
			b.ReportMetric(medianMs(runs), "running-ms")
		})
	}
}

// medianMs is the median of ds in milliseconds.
func medianMs(ds []time.Duration) float64 {
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return float64(ds[len(ds)/2].Microseconds()) / 1000
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
	if err := store.Append(ctx, id, history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "read the files"}}}); err != nil {
		b.Fatal(err)
	}
	if err := storetest.AppendReadRounds(ctx, store, id, n-2, nil); err != nil {
		b.Fatal(err)
	}
	if err := store.Append(ctx, id, history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: "done"}}}); err != nil {
		b.Fatal(err)
	}
	return id
}

// summarised adds to conversation id of n messages, in the store at path,
// a record summarising all but about its last kept messages: what a long
// session that the window's policy has summarised holds (a turn then sends
// the summary and the messages after it, and a resume need read only
// those: issue 34, point 4).
func summarised(b testing.TB, path, id string, n, kept int) {
	store, err := sqlite.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	through := n - kept
	if through%2 == 0 {
		through-- // an answer's place (storedRounds: a prompt, then calls and results)
	}
	rec := history.Message{Role: history.Context, Edit: &history.Edit{Why: "the window is full", Summary: &history.Summary{Through: through, Text: "We read the files one by one; each said what was asked."}}}
	if err := store.Append(context.Background(), id, rec); err != nil {
		b.Fatal(err)
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
