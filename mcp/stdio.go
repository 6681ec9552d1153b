package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/myelin-run/myelin/child"
	"github.com/myelin-run/myelin/internal/leftover"
	"github.com/myelin-run/myelin/workspace"
)

// process is a started stdio server: its own process group, which dies
// with myelin however myelin stops (package child), stderr going to its
// log file.
type process struct {
	cmd   *exec.Cmd
	group *child.Group
	done  chan struct{} // closed when the process has exited
	err   error         // what cmd.Wait said; read after done
	conn  *lineConn
	log   string // the path of its log file
	// logFrom is where this start's lines begin in the log.
	logFrom int64
	// privateDir, when set (its Path), is the directory of its own it
	// runs in (its entry names no cwd), locked while it runs and removed
	// once it has exited (serverDirs).
	privateDir leftover.Dir
}

// serverDirs is the kind of the directory of its own a stdio server
// whose entry names no "cwd" runs in: $TMPDIR/myelin-mcp-<pid>-<random>.<server>,
// locked by myelin while the server runs. The server may write files in
// it, so one a killed myelin left is removed whole by a later sweep (at
// the next such server's start), never following a link in it, and only
// once nobody holds its lock (package internal/leftover). Those named
// myelin-mcp-<server>-<random> (made before locks) are never swept.
var serverDirs = &leftover.Kind{Prefix: "myelin-mcp-", Dir: true, Full: true, Labelled: true}

// workDir is the directory a stdio server runs in: its entry's cwd
// (relative to the workspace root) when it names one, and otherwise a new
// empty directory of its own (private is set: Remove it once the server
// has exited), readable by the user alone and never inside the workspace.
//
// Never the workspace by default: what a server's runtime reads from its
// working directory runs as the server — `python3 -m module` puts it
// first on sys.path, npx and uv take its package.json or pyproject.toml,
// a wrapper sources its .envrc — and the model writes the workspace's
// files (workspace--write). An entry that means to run the workspace's
// files says so with "cwd", which its approval shows (Describe).
func workDir(s Server, root string) (dir string, private leftover.Dir, err error) {
	if s.Cwd != "" {
		if filepath.IsAbs(s.Cwd) {
			return s.Cwd, leftover.Dir{}, nil
		}
		return filepath.Join(root, s.Cwd), leftover.Dir{}, nil
	}
	if !filepath.IsAbs(s.Command) && strings.ContainsRune(s.Command, filepath.Separator) {
		return "", leftover.Dir{}, fmt.Errorf(`its command %q is a path relative to the working directory, and a server whose entry names no "cwd" runs in an empty directory of its own, not in the workspace (so that no file written there runs as the server); give the entry "cwd": "." to run the workspace's %s, or give the command's absolute path`, s.Command, s.Command)
	}
	private, err = serverDirs.MakeDir(safe(s.Name))
	if err != nil {
		return "", leftover.Dir{}, fmt.Errorf("making the empty directory it runs in: %w", err)
	}
	dir = private.Path
	if inside(dir, root) {
		private.Remove()
		return "", leftover.Dir{}, fmt.Errorf(`the temporary directory %s, where a server whose entry names no "cwd" runs, is inside the workspace %s, whose files the model writes: set TMPDIR to a directory outside the workspace, or give the entry a "cwd"`, filepath.Dir(dir), root)
	}
	return dir, private, nil
}

// inside reports whether path is root or under it, symbolic links
// resolved.
func inside(path, root string) bool {
	p, err1 := filepath.EvalSymlinks(path)
	r, err2 := filepath.EvalSymlinks(root)
	if err1 != nil || err2 != nil {
		p, r = filepath.Clean(path), filepath.Clean(root)
	}
	if abs, err := filepath.Abs(r); err == nil {
		r = abs
	}
	rel, err := filepath.Rel(r, p)
	return err == nil && filepath.IsLocal(rel) || rel == "."
}

// startProcess starts s in its working directory (workDir) with only the
// environment s.Environ gives, and connects to its stdin and stdout.
func startProcess(s Server, o *Options) (*process, error) {
	dir, private, err := workDir(s, o.Dir)
	if err != nil {
		return nil, err
	}
	started := false
	defer func() {
		if !started {
			private.Remove()
		}
	}()
	logFile, logPath, err := openLog(o.Dir, s)
	if err != nil {
		return nil, err
	}
	var logFrom int64
	var logW io.Writer = io.Discard // a log that could not be opened safely (cmd/myelin warns)
	if logFile != nil {
		logFrom, logW = logFile.Size(), logFile // after the start marker
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		closeLog(logFile)
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		closeLog(logFile)
		return nil, err
	}
	// stderr goes through a pipe of ours into the capped log, not to the
	// log's file itself: a server writing without end then fills at most
	// twice logMax.
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		closeLog(logFile)
		return nil, err
	}
	cmd := exec.Command(s.Command, s.Args...)
	cmd.Dir = dir
	cmd.Env = s.Environ(o.Lookup)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	// Confined as its entry asks, before it starts (package sandbox).
	err = applySandbox(s, cmd, dir, private.Path != "", o.Dir)
	var group *child.Group
	if err == nil {
		group, err = child.Start(cmd)
	}
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		closeLog(logFile)
		return nil, fmt.Errorf("starting %s: %w", s.Command, err)
	}
	copied := make(chan struct{})
	go func() {
		_, _ = io.Copy(logW, errR)
		errR.Close()
		close(copied)
	}()
	started = true
	p := &process{cmd: cmd, group: group, done: make(chan struct{}), log: logPath, logFrom: logFrom, privateDir: private}
	p.conn = newLineConn(inW, outR, o.maxReply())
	p.conn.stray = logW // lines on stdout that are not JSON-RPC go to the log
	go func() {
		p.err = group.Wait() // not cmd.Wait: it notices a supervisor the server stopped
		// Whatever it left behind in its group goes with it, and so does
		// its own dir; the session learns then that the server is gone
		// (at once, but for the sweep of left dirs this server's start
		// began, if still running, waited for a second at most: so a
		// myelin whose one server ends has swept).
		group.Kill()
		p.privateDir.Remove()
		// Its stderr is in the log before anyone reads the log's tail
		// (a process that left the group may hold the pipe: not for long).
		select {
		case <-copied:
		case <-time.After(time.Second):
		}
		close(p.done)
		p.conn.Close()
		closeLog(logFile)
	}()
	return p, nil
}

// logMax caps each server's log (.myelin/logs/mcp-<server>.log): over it,
// the log is renamed to .log.1 (replacing the one there) and a new one
// begun, so that a server's logs take at most twice logMax.
const logMax = 10 << 20

func closeLog(l *workspace.Log) {
	if l != nil {
		l.Close()
	}
}

// openLog opens .myelin/logs/mcp-<server>.log for appending (capped at
// logMax), writes a line marking this start, and returns it with its path.
// It follows no symbolic link (workspace.OpenLog): when the log, or a
// directory on its way, is one, the log is nil, its path says why, and the
// server runs without a log (cmd/myelin warns of such links once, before
// any server starts).
func openLog(root string, s Server) (*workspace.Log, string, error) {
	l, err := workspace.OpenLog(root, workspace.OwnDir+"/logs/mcp-"+safe(s.Name)+".log", logMax)
	var le *workspace.OwnLinkError
	if errors.As(err, &le) {
		return nil, "(no log: " + err.Error() + ")", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("opening the server's log: %w", err)
	}
	fmt.Fprintf(l, "--- myelin started %s at %s\n", s.Command, time.Now().UTC().Format(time.RFC3339))
	return l, l.Path(), nil
}

// exited describes how the process ended, once it has.
func (p *process) exited() string {
	if p.err == nil {
		return "exit status 0"
	}
	return p.err.Error()
}

// explain says why connecting failed when the process exited: its exit
// status and the last lines it wrote to stderr. The error connecting gave
// stays underneath (a cancelled context's among them).
func (p *process) explain(err error) error {
	select {
	case <-p.done:
	case <-time.After(time.Second):
		return err
	}
	where := ""
	if p.privateDir.Path != "" {
		where = `; it ran in an empty directory of its own, not in the workspace: an entry that runs the workspace's files (python3 server.py, node build/index.js) names the workspace with "cwd": "." (docs/mcp.md, "Working directory")`
	}
	if strings.HasPrefix(p.log, "(") { // no log: p.log says why
		return &exitError{fmt.Sprintf("the server exited (%s) before it answered; its stderr was not kept %s%s", p.exited(), p.log, where), err}
	}
	return &exitError{fmt.Sprintf("the server exited (%s) before it answered; the end of its stderr (in %s): %s%s", p.exited(), p.log, logTail(p.log, p.logFrom), where), err}
}

// exitError says how a server that exited before it answered ended, over
// the error connecting to it gave.
type exitError struct {
	why   string
	cause error
}

func (e *exitError) Error() string { return e.why }
func (e *exitError) Unwrap() error { return e.cause }

// logTail is the end of what a log holds from offset from (this start's
// lines), as one line; it reads at most the last 64 KiB.
func logTail(path string, from int64) string {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil {
		if st.Size() < from { // rotated since: all of it is this start's
			from = 0
		}
		from = max(from, st.Size()-64<<10)
	}
	data, err := io.ReadAll(io.NewSectionReader(f, from, 64<<10))
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	text := strings.Join(strings.Fields(string(data)), " ")
	if text == "" {
		return "(nothing)"
	}
	if r := []rune(text); len(r) > 300 {
		text = "…" + string(r[len(r)-300:])
	}
	return text
}

// stop ends the process as the MCP lifecycle says: its stdin is closed,
// then after grace it gets SIGTERM, then after grace again SIGKILL (the
// whole process group, so that a wrapper's children go too).
func (p *process) stop(grace time.Duration) {
	p.conn.Close()
	for _, sig := range []os.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		select {
		case <-p.done:
			return
		case <-time.After(grace):
		}
		_ = p.group.Signal(sig)
	}
	<-p.done
}

// lineConn is the JSON-RPC connection over a stdio server's stdin and
// stdout, a message per line. Unlike the SDK's IOTransport it survives a
// reply over its bound: the rest of that line is skipped, and the call it
// answers gets an error that says how large the reply was.
type lineConn struct {
	in       io.WriteCloser
	out      io.Closer
	wmu      sync.Mutex
	captor   captor
	incoming chan incoming
	closed   chan struct{}
	once     sync.Once
	queue    []jsonrpc.Message // the rest of a batch; Read's alone
	// stray gets the lines a server writes to stdout that are not
	// JSON-RPC (a banner, a log line), which are skipped, not fatal.
	stray io.Writer
}

type incoming struct {
	msgs []jsonrpc.Message
	err  error
}

func newLineConn(in io.WriteCloser, out io.ReadCloser, max int64) *lineConn {
	c := &lineConn{in: in, out: out, incoming: make(chan incoming), closed: make(chan struct{})}
	go c.readLoop(out, max)
	return c
}

// transport hands the SDK this connection.
func (c *lineConn) transport() sdk.Transport { return connTransport{c} }

type connTransport struct{ c sdk.Connection }

func (t connTransport) Connect(context.Context) (sdk.Connection, error) { return t.c, nil }

func (c *lineConn) readLoop(r io.Reader, max int64) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		msgs, err := c.next(br, max)
		if len(msgs) > 0 || err != nil {
			for _, m := range msgs {
				c.captor.received(m)
			}
			select {
			case c.incoming <- incoming{msgs, err}:
			case <-c.closed:
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// next reads one line and decodes its message (or batch). A line over
// max is not kept: it is scanned for its id, and an error reply for that id
// stands in for it. A line over spoolAt goes to a file as it is read, and
// when it is the reply to a tools/call of text, its result is read from
// there (takeSpooled) rather than in memory.
func (c *lineConn) next(br *bufio.Reader, max int64) ([]jsonrpc.Message, error) {
	var sp spool
	defer sp.close()
	size, err := readLineTo(br, max, &sp)
	if err != nil {
		if err == io.EOF && size > 0 {
			err = io.ErrUnexpectedEOF // a last line without its newline: the server died writing it
		}
		return nil, err
	}
	if size > max || sp.werr != nil {
		id, err := sp.rest.ID()
		switch {
		case err != nil && sp.werr != nil:
			return nil, fmt.Errorf("the server sent a message of %s, and keeping it failed (%w), and %w, so it cannot be answered", sizeOf(size), sp.werr, err)
		case err != nil:
			return nil, fmt.Errorf("the server sent a message of %s, over the bound of %s, and %w, so it cannot be answered", sizeOf(size), sizeOf(max), err)
		case sp.werr != nil:
			return []jsonrpc.Message{notKept(id, size, sp.werr)}, nil
		}
		return []jsonrpc.Message{tooLarge(id, size, max)}, nil
	}
	line := sp.mem
	if sp.spooled() {
		if resp, err := c.takeSpooled(&sp); err == nil {
			return []jsonrpc.Message{resp}, nil
		}
		// Not a reply of text to a call waiting for it: decoded in memory,
		// as a line always was.
		if line, err = sp.bytes(); err != nil {
			if c.stray != nil {
				fmt.Fprintf(c.stray, "--- myelin skipped a message of %s on the server's stdout: %v\n", sizeOf(size), err)
			}
			return nil, nil
		}
	}
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil, nil
	}
	if line[0] == '[' {
		if msgs, ok := batch(line); ok {
			return msgs, nil
		}
	}
	m, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		if c.stray != nil {
			fmt.Fprintf(c.stray, "--- myelin skipped a line on the server's stdout that is not JSON-RPC (%v): %s\n", err, clip(line))
		}
		return nil, nil
	}
	return []jsonrpc.Message{m}, nil
}

// takeSpooled reads the spooled reply of a tools/call that waits for it.
func (c *lineConn) takeSpooled(sp *spool) (*jsonrpc.Response, error) {
	src, err := sp.reader()
	if err != nil {
		return nil, err
	}
	resp, err := takeSpooled(src, sp.size, c.captor.waiting)
	if err != nil {
		return nil, err
	}
	c.captor.received(resp) // the call no longer waits: its reply is this one
	return resp, nil
}

// batch decodes a line holding an array of JSON-RPC messages.
func batch(line []byte) ([]jsonrpc.Message, bool) {
	var raws []json.RawMessage
	if json.Unmarshal(line, &raws) != nil || len(raws) == 0 {
		return nil, false
	}
	msgs := make([]jsonrpc.Message, 0, len(raws))
	for _, raw := range raws {
		m, err := jsonrpc.DecodeMessage(raw)
		if err != nil {
			return nil, false
		}
		msgs = append(msgs, m)
	}
	return msgs, true
}

// notKept is the error reply that stands in for a reply of size bytes that
// could not be kept (its spool file failed).
func notKept(id jsonrpc.ID, size int64, err error) *jsonrpc.Response {
	return &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{
		Code:    jsonrpc.CodeInternalError,
		Message: fmt.Sprintf("the reply of %s could not be kept: %v", sizeOf(size), err),
	}}
}

// errTooLarge starts the error a call gets for a reply over the bound.
const errTooLarge = "reply too large"

// codeTooLarge is the code of the error reply that stands in for a reply
// over the bound: one of the codes JSON-RPC leaves to implementations
// (-32000 to -32099), so that the call tells it by its code
// (errors.Is(err, errReplyTooLarge): the SDK's error compares codes).
const codeTooLarge = -32099

// errReplyTooLarge is what errors.Is matches a call's error against to
// tell a reply over the bound.
var errReplyTooLarge = &jsonrpc.Error{Code: codeTooLarge}

// tooLarge is the error reply that stands in for a reply of size bytes,
// over max.
func tooLarge(id jsonrpc.ID, size, max int64) *jsonrpc.Response {
	return &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{
		Code:    codeTooLarge,
		Message: fmt.Sprintf("%s: the reply was %s, over the bound of %s, so myelin did not read it", errTooLarge, sizeOf(size), sizeOf(max)),
	}}
}

// readLineTo reads up to and including the next '\n' into sp, and
// returns the line's size. A line over spoolAt is also fed to an idScan
// (sp.rest) from its start, so that one that is not kept — longer than
// max, or its file failed (sp.werr) — can still be answered: sp then drops
// what it held, so that at most max bytes are ever held, in memory or in
// sp's file. At the end of input err is io.EOF, and size counts what came
// after the last '\n'.
func readLineTo(br *bufio.Reader, max int64, sp *spool) (size int64, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		size += int64(len(chunk))
		if sp.rest == nil && (size > spoolAt || size > max) {
			sp.rest = &idScan{}
			sp.rest.feed(sp.mem) // all of the line before this chunk
		}
		if sp.rest != nil {
			sp.rest.feed(chunk)
		}
		switch {
		case size > max:
			sp.close()
		case sp.werr == nil:
			if _, werr := sp.Write(chunk); werr != nil {
				// Not kept, but read to its end all the same, so that the
				// call it answers gets an error and the session goes on.
				sp.werr = werr
				sp.close()
			}
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return size, err
		}
	}
}

// bigLine is the size over which readLine collects a line's pieces as
// soon as they are joined.
const bigLine = 8 << 20

// readLine reads up to and including the next '\n'. A line longer than
// max is not kept: line is nil, size says how long it was, and each of its
// pieces goes to skipped as it is read. At the end of input err is io.EOF,
// and size counts what came after the last '\n'.
//
// The line is kept in pieces as it is read and joined once at its end, in
// one allocation of its exact size: a growing buffer would copy itself at
// each doubling and leave the old copies to the collector, so that a line
// refused at the bound took about twice the bound (628 MB for a 300 MiB
// reply over a 256 MiB bound).
func readLine(br *bufio.Reader, max int64, skipped func([]byte)) (line []byte, size int64, err error) {
	var pieces [][]byte
	over := false
	for {
		chunk, err := br.ReadSlice('\n')
		size += int64(len(chunk))
		switch {
		case over:
			skipped(chunk)
		case size > max:
			over = true
			for _, p := range pieces {
				skipped(p)
			}
			pieces = nil
			skipped(chunk)
		default:
			pieces = append(pieces, bytes.Clone(chunk)) // chunk is the reader's, until its next read
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		switch {
		case over:
			return nil, size, err
		case len(pieces) == 1:
			return pieces[0], size, err
		}
		line = bytes.Join(pieces, nil)
		if size > bigLine {
			// The pieces are garbage now; collected before the message is
			// decoded (which copies its result), their pages take that
			// copy instead of new ones.
			pieces = nil
			runtime.GC()
		}
		return line, size, err
	}
}

// Read gives the SDK the next message.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if len(c.queue) > 0 {
		m := c.queue[0]
		c.queue = c.queue[1:]
		return m, nil
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	case in := <-c.incoming:
		if in.err != nil {
			return nil, in.err
		}
		c.queue = in.msgs[1:]
		return in.msgs[0], nil
	}
}

// Write sends a message as one line.
func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	s := c.captor.sent(ctx, msg)
	data, err := jsonrpc.EncodeMessage(msg)
	if err == nil {
		c.wmu.Lock()
		_, err = c.in.Write(append(data, '\n'))
		c.wmu.Unlock()
	}
	if err != nil && s != nil {
		c.captor.forget(s)
	}
	return err
}

// Close closes the server's stdin, which asks a stdio server to exit, and
// stops reading.
func (c *lineConn) Close() error {
	c.once.Do(func() {
		close(c.closed)
		c.in.Close()
		c.out.Close()
	})
	return nil
}

// SessionID is empty: stdio has no sessions.
func (c *lineConn) SessionID() string { return "" }

func sizeOf(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

func clip(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}
