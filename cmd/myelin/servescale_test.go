//go:build linux

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/myelin-run/myelin/provider/providertest"
)

// The serve-at-scale benchmark's load (issue 34): scaleWatched
// conversations, each with an idle event stream open, while
// scaleTurning of them turn at once, each a turn of scaleTurnRounds
// rounds of one workspace--read call against the fake provider.
// MYELIN_SCALE_WATCHERS sets another count of conversations.
const (
	scaleWatched    = 10_000
	scaleTurning    = 100
	scaleTurnRounds = 10
)

// TestServeAtScale measures `myelin serve` (the built binary, a child
// process on its SQLite store) holding 10,000 conversations each watched
// by an idle event stream while 100 of them turn at once
// (docs/performance.md, "`myelin serve` at scale"). It reports the
// server's memory (VmRSS, VmHWM) per conversation and per idle stream,
// beside a floor: a bare net/http server holding the same streams; its
// goroutines per stream (counted in its goroutine dump, SIGQUIT, at the
// end); and rounds per second of the 100 turns alone and beside the
// 10,000 idle streams. Every watcher of a turning conversation must get
// every event once, in order (ids contiguous), and the idle ones nothing
// but heartbeats. It runs only when MYELIN_SCALE=1, and asserts nothing
// about time or memory.
func TestServeAtScale(t *testing.T) {
	if os.Getenv("MYELIN_SCALE") != "1" {
		t.Skip("set MYELIN_SCALE=1 to run the serve-at-scale benchmark")
	}
	n := scaleWatched
	if v := os.Getenv("MYELIN_SCALE_WATCHERS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 2*scaleTurning {
			t.Fatalf("MYELIN_SCALE_WATCHERS=%q: give a whole number of conversations, %d or more", v, 2*scaleTurning)
		}
	}
	bin := buildMyelin(t)
	floorBin := buildSSEFloor(t)
	fake := fakeAnthropic(t)
	fake.Respond = providertest.Rounds(scaleTurnRounds, "workspace--read", `{"path":"a.txt"}`)
	fake.Ready() // the requests come from the built binary
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()

	// the floor: a bare net/http server holding n idle streams
	floor := startProc(t, floorBin, nil)
	floorBase := settledRSS(t, floor.pid())
	floorWatchers := openWatchers(ctx, t, floor.addr, nil, n, func(int) string { return "floor" })
	floorIdle := settledRSS(t, floor.pid())
	floorG := goroutineDump(t, floor)
	closeWatchers(floorWatchers)

	dir := workspaceWith(t, map[string]string{"a.txt": "alpha\n"})
	var env []string
	if v := os.Getenv("MYELIN_SCALE_GOMEMLIMIT"); v != "" {
		env = []string{"GOMEMLIMIT=" + v} // the server's alone
	}
	srv := startProc(t, bin, []string{"serve", "--workspace", dir, "--max-streams", fmt.Sprint(2 * n), "--max-streams-per-client", fmt.Sprint(2 * n)}, env...)
	defer srv.kill()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * scaleTurning}}
	base := settledRSS(t, srv.pid())

	convs := createConversations(ctx, t, client, srv.addr, n)
	client.CloseIdleConnections()
	made := settledRSS(t, srv.pid())

	// the first 100 turn alone, watched; then the idle streams open on
	// every other conversation, and the next 100 turn beside them
	first := openWatchers(ctx, t, srv.addr, convs[:scaleTurning], scaleTurning, nil)
	alone := turnAtOnce(ctx, t, client, srv.addr, first)
	client.CloseIdleConnections()
	beforeIdle := settledRSS(t, srv.pid())
	rest := openWatchers(ctx, t, srv.addr, convs[scaleTurning:], n-scaleTurning, nil)
	idle := settledRSS(t, srv.pid())
	beside := turnAtOnce(ctx, t, client, srv.addr, rest[:scaleTurning])
	client.CloseIdleConnections()
	after := settledRSS(t, srv.pid())
	// every stream not turning got nothing but heartbeats since its turn
	// (or since it opened)
	checkQuiet(t, append(first, rest[scaleTurning:]...))
	g := goroutineDump(t, srv)
	// closed only now: a connection no longer referenced is closed by its
	// finalizer, and the dump would miss its stream
	closeWatchers(first)
	closeWatchers(rest)

	t.Logf("VmRSS (MiB): at start %.1f, %d conversations made %.1f, after the first turns %.1f, idle streams open %.1f, after the second turns %.1f",
		mib(base.rss), n, mib(made.rss), mib(beforeIdle.rss), mib(idle.rss), mib(after.rss))
	// in KiB: VmRSS is in KiB
	perConv := float64(made.rss-base.rss) / float64(n)
	perWatcher := float64(idle.rss-beforeIdle.rss) / float64(n-scaleTurning)
	floorPer := float64(floorIdle.rss-floorBase.rss) / float64(n)
	load, _ := os.ReadFile("/proc/loadavg")
	t.Logf(`serve at scale: %d conversations, an idle stream on each, %d turning at once (%d rounds each); the server's GOMEMLIMIT %q
| figure | serve | floor (bare net/http) | ratio |
|---|---|---|---|
| VmRSS at start | %.1f MiB | %.1f MiB | |
| memory per conversation (created, not watched) | %.1f KiB | | |
| memory per idle stream | %.1f KiB | %.1f KiB | %.2f× |
| VmRSS with %d idle streams | %.1f MiB | %.1f MiB | |
| VmRSS after the second 100 turns / VmHWM / RssFile | %.1f / %.1f / %.1f MiB | | |
| goroutines per stream | %.2f (%d in all: %d serving a connection, %d reading it in the background, %d other) | %.2f (%d in all) | %.2f× |
| rounds/s, 100 turning alone | %.0f | | |
| rounds/s, 100 turning beside %d idle streams | %.0f (%.2f× alone) | | |
events of the turning conversations: %d alone, %d beside, every id once and in order
load average: %s`,
		n, scaleTurning, scaleTurnRounds, os.Getenv("MYELIN_SCALE_GOMEMLIMIT"),
		mib(base.rss), mib(floorBase.rss),
		perConv,
		perWatcher, floorPer, perWatcher/floorPer,
		n, mib(idle.rss), mib(floorIdle.rss),
		mib(after.rss), mib(after.hwm), mib(after.file),
		float64(g.all)/float64(n), g.all, g.conn, g.background, g.all-g.conn-g.background,
		float64(floorG.all)/float64(n), floorG.all, float64(g.all)/float64(floorG.all),
		alone.rate(), n-scaleTurning, beside.rate(), beside.rate()/alone.rate(),
		alone.events, beside.events, strings.TrimSpace(string(load)))
}

func mib(kb int64) float64 { return float64(kb) / 1024 }

// scaleProc is a server process of the benchmark: its command, address
// and stderr (a file: a goroutine dump is long).
type scaleProc struct {
	cmd    *exec.Cmd
	addr   string
	stderr *os.File
}

func (p *scaleProc) pid() int { return p.cmd.Process.Pid }

func (p *scaleProc) kill() {
	if p.cmd.ProcessState == nil {
		p.cmd.Process.Signal(syscall.SIGKILL)
		p.cmd.Wait()
	}
}

// startProc starts bin with args and --addr (a free port; the floor takes
// it as its one argument), env added to the test's, and waits until it
// answers.
func startProc(t *testing.T, bin string, args []string, env ...string) *scaleProc {
	t.Helper()
	addr := freeAddr(t)
	if args == nil {
		args = []string{addr}
	} else {
		args = append(args, "--addr", addr)
	}
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), "GOTRACEBACK=all"), env...)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &scaleProc{cmd: cmd, addr: addr, stderr: stderr}
	t.Cleanup(p.kill)
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		if resp, err := http.Get("http://" + addr + "/v1/conversations/none"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Since(start) > time.Minute {
			out, _ := os.ReadFile(stderr.Name())
			t.Fatalf("%s does not answer on %s after a minute: %s", bin, addr, out)
		}
	}
	return p
}

// memory is a process's VmRSS, VmHWM and RssFile (the pages of its files
// mapped, its binary's: not the Go runtime's, which GOMEMLIMIT bounds),
// in KiB.
type memory struct{ rss, hwm, file int64 }

// settledRSS is process pid's memory once its RSS has stopped moving
// (three readings a second apart within 1%, or after 20 s): what a
// phase left, not what it is doing.
func settledRSS(t *testing.T, pid int) memory {
	t.Helper()
	last := readMemory(t, pid)
	for i := 0; i < 20; i++ {
		time.Sleep(time.Second)
		m := readMemory(t, pid)
		if d := m.rss - last.rss; d*100 <= last.rss && -d*100 <= last.rss && i >= 2 {
			return m
		}
		last = m
	}
	return last
}

func readMemory(t *testing.T, pid int) memory {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	var m memory
	for _, line := range strings.Split(string(b), "\n") {
		name, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch name {
		case "VmRSS":
			m.rss = kb
		case "VmHWM":
			m.hwm = kb
		case "RssFile":
			m.file = kb
		}
	}
	return m
}

// createConversations makes n conversations through the API, 8 at a time,
// and returns their ids in order.
func createConversations(ctx context.Context, t *testing.T, client *http.Client, addr string, n int) []string {
	t.Helper()
	ids := make([]string, n)
	err := inParallel(ctx, n, 8, func(i int) error {
		resp, err := client.Post("http://"+addr+"/v1/conversations", "application/json", strings.NewReader("{}"))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusCreated {
			return fmt.Errorf("creating conversation %d: %d %s", i, resp.StatusCode, body)
		}
		m := regexp.MustCompile(`"id":"([^"]+)"`).FindSubmatch(body)
		if m == nil {
			return fmt.Errorf("creating conversation %d: no id in %s", i, body)
		}
		ids[i] = string(m[1])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// inParallel runs do(0) … do(n-1), width at a time, and returns the first
// error.
func inParallel(ctx context.Context, n, width int, do func(int) error) error {
	var wg sync.WaitGroup
	next := make(chan int)
	errs := make(chan error, width)
	for range width {
		wg.Go(func() {
			for i := range next {
				if err := do(i); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		select {
		case next <- i:
		case err := <-errs:
			close(next)
			wg.Wait()
			return err
		}
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return ctx.Err()
	}
}

// sseWatcher is one event stream of the benchmark, on a connection of its
// own: its conversation, and the id of the last event it read.
type sseWatcher struct {
	conv   string
	conn   net.Conn
	events *bufio.Reader // the stream's body, its chunks decoded
	seq    int64
}

// openWatchers opens n event streams on addr, 16 at a time: of convs[i],
// or of path(i) when convs is nil (the floor serves any path).
func openWatchers(ctx context.Context, t *testing.T, addr string, convs []string, n int, path func(int) string) []*sseWatcher {
	t.Helper()
	ws := make([]*sseWatcher, n)
	err := inParallel(ctx, n, 16, func(i int) error {
		conv := "floor"
		if convs != nil {
			conv = convs[i]
		} else if path != nil {
			conv = path(i)
		}
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			return fmt.Errorf("stream %d: %w", i, err)
		}
		fmt.Fprintf(conn, "GET /v1/conversations/%s/events HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n\r\n", conv, addr)
		br := bufio.NewReaderSize(conn, 1024)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			conn.Close()
			return fmt.Errorf("stream %d of %s: %w", i, conv, err)
		}
		if resp.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1000))
			conn.Close()
			return fmt.Errorf("stream %d of %s: %d %s", i, conv, resp.StatusCode, body)
		}
		ws[i] = &sseWatcher{conv: conv, conn: conn, events: bufio.NewReaderSize(resp.Body, 1024)}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

func closeWatchers(ws []*sseWatcher) {
	for _, w := range ws {
		if w != nil {
			w.conn.Close()
		}
	}
}

// turnResult is what one phase of turns measured.
type turnResult struct {
	wall   time.Duration
	rounds int
	events int
}

func (r turnResult) rate() float64 { return float64(r.rounds) / r.wall.Seconds() }

// turnAtOnce starts a turn on each watcher's conversation at once and
// reads each watcher's stream to its turn.finished, checking that the ids
// follow on from the last it read with none missing or twice, and that
// the turn ran its rounds.
func turnAtOnce(ctx context.Context, t *testing.T, client *http.Client, addr string, ws []*sseWatcher) turnResult {
	t.Helper()
	var mu sync.Mutex
	var res turnResult
	start := time.Now()
	err := inParallel(ctx, len(ws), len(ws), func(i int) error {
		w := ws[i]
		resp, err := client.Post("http://"+addr+"/v1/conversations/"+w.conv+"/turns", "application/json", strings.NewReader(`{"prompt":"go"}`))
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			return fmt.Errorf("%s: starting the turn: %d %s", w.conv, resp.StatusCode, body)
		}
		from := w.seq
		if err := w.readTurn(scaleTurnRounds); err != nil {
			return err
		}
		mu.Lock()
		res.events += int(w.seq - from)
		res.rounds += scaleTurnRounds
		mu.Unlock()
		return nil
	})
	res.wall = time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// readTurn reads w's stream to a turn.finished, which must say the turn
// ended after rounds rounds; every id must be the one after the last.
func (w *sseWatcher) readTurn(rounds int) error {
	finished, tools := false, 0
	for {
		line, err := w.events.ReadString('\n')
		if err != nil {
			return fmt.Errorf("%s: the stream ended after event %d: %w", w.conv, w.seq, err)
		}
		switch {
		case strings.HasPrefix(line, "id: "):
			n, _ := strconv.ParseInt(strings.TrimSpace(line[4:]), 10, 64)
			if n != w.seq+1 {
				return fmt.Errorf("%s: event %d after event %d", w.conv, n, w.seq)
			}
			w.seq = n
		case line == "event: tool.finished\n":
			tools++
		case line == "event: turn.finished\n":
			finished = true
		case strings.HasPrefix(line, "data: ") && finished:
			if !strings.Contains(line, `"reason":"end_turn"`) || !strings.Contains(line, fmt.Sprintf(`"rounds":%d`, rounds)) {
				return fmt.Errorf("%s: the turn ended %s", w.conv, line)
			}
			if tools != rounds {
				return fmt.Errorf("%s: %d tool.finished events for %d rounds", w.conv, tools, rounds)
			}
			return nil
		}
	}
}

// checkQuiet reads what each watcher got since it last read, for two
// seconds, all at once: nothing but comments (heartbeats) and blank
// lines, and the stream still open.
func checkQuiet(t *testing.T, ws []*sseWatcher) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(ws))
	deadline := time.Now().Add(2 * time.Second)
	for _, w := range ws {
		wg.Go(func() {
			w.conn.SetReadDeadline(deadline)
			for {
				line, err := w.events.ReadString('\n')
				if errors.Is(err, os.ErrDeadlineExceeded) {
					return
				}
				if err != nil {
					errs <- fmt.Errorf("%s: the idle stream ended: %v", w.conv, err)
					return
				}
				if line != "\n" && !strings.HasPrefix(line, ":") {
					errs <- fmt.Errorf("%s: an idle stream got %q", w.conv, line)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// goroutines is a goroutine dump's count: in all, serving a connection
// (net/http's conn.serve, one per connection) and reading one in the
// background (net/http's, one per connection whose handler runs).
type goroutines struct{ all, conn, background int }

// goroutineDump stops p with SIGQUIT (GOTRACEBACK=all: every goroutine's
// stack to stderr) and counts the goroutines of its dump.
func goroutineDump(t *testing.T, p *scaleProc) goroutines {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGQUIT)
	p.cmd.Wait()
	out, err := os.ReadFile(p.stderr.Name())
	if err != nil {
		t.Fatal(err)
	}
	var g goroutines
	start := regexp.MustCompile(`(?m)^goroutine \d+ `)
	idx := start.FindAllIndex(out, -1)
	for i, at := range idx {
		end := len(out)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		}
		stack := string(out[at[0]:end])
		g.all++
		switch {
		case strings.Contains(stack, "net/http.(*conn).serve("):
			g.conn++
		case strings.Contains(stack, "net/http.(*connReader).backgroundRead("):
			g.background++
		}
	}
	if g.all == 0 {
		t.Fatalf("no goroutine dump in the server's stderr (%d bytes)", len(out))
	}
	return g
}

// sseFloor is the floor of the memory per stream: a bare net/http server
// whose every request is an event stream that sends its headers and
// waits, as an idle stream of serve does.
const sseFloor = `package main

import (
	"net/http"
	"os"
)

func main() {
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	if err := http.ListenAndServe(os.Args[1], nil); err != nil {
		panic(err)
	}
}
`

// buildSSEFloor builds sseFloor and returns the binary's path.
func buildSSEFloor(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte(sseFloor), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "ssefloor")
	cmd := exec.Command("go", "build", "-o", bin, src)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the floor: %v\n%s", err, out)
	}
	return bin
}
