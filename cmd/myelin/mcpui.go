package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/myelin-run/myelin/mcp"
)

// mcpUI is what a person at the terminal sees of what MCP servers ask
// during calls: their elicitations (asked on the terminal), their sampling
// requests and their progress. Questions go to out (stderr) and answers
// are read from in, a line at a time; with no terminal (in nil),
// elicitations are declined by package mcp, which says why.
type mcpUI struct {
	in  io.Reader
	out io.Writer
	// input is in's lines, shared with chat's prompt and the approval
	// questions (terminput.go); nil with no terminal.
	input *termInput
	// sampler completes sampling requests with the conversation's model
	// (run and chat; serve's is the HTTP API's); nil in `tool call` and
	// `mcp list`.
	sampler mcp.Sampler
	// elicitor, when set, asks instead of the terminal: serve's HTTP API,
	// whose clients answer.
	elicitor mcp.Elicitor

	mu     sync.Mutex  // guards rep
	asking atomic.Bool // a question is on the screen: nothing else is drawn
	rep    *reporter   // the turn's reporter, whose tool line shows progress
	ask1   sync.Mutex  // one question at a time
}

// newMCPUI is the UI of a command: questions are asked when stdin and
// stderr are both a terminal, and not otherwise.
func newMCPUI(stdin io.Reader, stderr io.Writer) *mcpUI {
	u := &mcpUI{out: stderr}
	if isTerminal(stdin) && isTerminal(stderr) {
		u.in = stdin
		u.input = newTermInput(stdin)
	}
	return u
}

// options are the mcp.Options fields the UI supplies.
func (u *mcpUI) options(o *mcp.Options) {
	if u == nil {
		return
	}
	switch {
	case u.elicitor != nil:
		o.Elicitor = u.elicitor
	case u.in != nil:
		o.Elicitor = u
	}
	if u.sampler != nil {
		o.Sampler = u.sampler
	}
	o.Notify = u.notify
	o.Progress = u.progress
}

// notify tells the user, on stderr, what a server (or a subagent,
// delegate.go) did: through the turn's reporter while a turn runs.
func (u *mcpUI) notify(msg string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.rep != nil {
		u.rep.notice(msg)
		return
	}
	fmt.Fprintf(u.out, "myelin: %s\n", msg)
}

// progress shows a call's progress on its tool line, during a turn on a
// terminal.
func (u *mcpUI) progress(p mcp.Progress) {
	u.mu.Lock()
	rep := u.rep
	u.mu.Unlock()
	if rep == nil {
		return
	}
	line := fmt.Sprintf("tool %s · %s", p.Tool, strconv.FormatFloat(p.Progress, 'f', -1, 64))
	if p.Total > 0 {
		line += "/" + strconv.FormatFloat(p.Total, 'f', -1, 64)
	}
	if p.Message != "" {
		line += " · " + oneLine(p.Message, 60)
	}
	rep.setStatus(p.Tool, line)
}

// turn has the UI draw on the turn's reporter until the turn ends.
func (u *mcpUI) turn(rep *reporter) (end func()) {
	if u == nil {
		return func() {}
	}
	u.mu.Lock()
	u.rep = rep
	rep.paused = u.paused
	u.mu.Unlock()
	return func() {
		u.mu.Lock()
		u.rep = nil
		u.mu.Unlock()
	}
}

// paused reports whether a question is on the screen (the spinner waits).
func (u *mcpUI) paused() bool { return u.asking.Load() }

// takeTerminal waits for the terminal's questions to be free (one at a
// time: an elicitation, an approval), marks one being asked (so that the
// progress line stays quiet) and clears the progress line; the func it
// returns gives the terminal back.
func (u *mcpUI) takeTerminal() (release func()) {
	u.ask1.Lock()
	u.asking.Store(true)
	u.mu.Lock()
	if u.rep != nil {
		u.rep.clearLine()
	}
	u.mu.Unlock()
	return func() {
		u.asking.Store(false)
		u.ask1.Unlock()
	}
}

// errNoAnswer is the input ending before a question was answered.
var errNoAnswer = errors.New("the input ended")

// Elicit asks the user on the terminal: for a form, each field in turn,
// an empty line taking its default; for a URL, to visit it and say done.
func (u *mcpUI) Elicit(ctx context.Context, e *mcp.Elicitation) (mcp.Answer, error) {
	defer u.takeTerminal()()
	a, err := u.ask(ctx, e)
	if errors.Is(err, errNoAnswer) {
		fmt.Fprintln(u.out, "\nmyelin: no answer: the request is cancelled")
		return mcp.Answer{Action: "cancel"}, nil
	}
	return a, err
}

func (u *mcpUI) ask(ctx context.Context, e *mcp.Elicitation) (mcp.Answer, error) {
	fmt.Fprintf(u.out, "MCP server %s asks: %s\n", e.Server, e.Message)
	if e.Mode == "url" {
		fmt.Fprintf(u.out, "  Open this URL: %s\n  Press Enter when you are done there, or type n to decline: ", e.URL)
		line, err := u.line(ctx)
		if err != nil {
			return mcp.Answer{}, err
		}
		if isNo(line) {
			return mcp.Answer{Action: "decline"}, nil
		}
		return mcp.Answer{Action: "accept"}, nil
	}
	fmt.Fprint(u.out, "  Answer it? [Y/n] ")
	line, err := u.line(ctx)
	if err != nil {
		return mcp.Answer{}, err
	}
	if isNo(line) {
		return mcp.Answer{Action: "decline"}, nil
	}
	content := map[string]any{}
	for _, f := range e.Fields {
		for {
			fmt.Fprintf(u.out, "  %s: ", fieldPrompt(f))
			line, err := u.line(ctx)
			if err != nil {
				return mcp.Answer{}, err
			}
			v, ok, err := fieldValue(f, line)
			if err != nil {
				fmt.Fprintf(u.out, "  %v\n", err)
				continue
			}
			if ok {
				content[f.Name] = v
			}
			break
		}
	}
	return mcp.Answer{Action: "accept", Content: content}, nil
}

// fieldPrompt is how a field is asked: its name, what it is, and its
// default in brackets.
func fieldPrompt(f mcp.Field) string {
	var about []string
	if f.Title != "" {
		about = append(about, f.Title)
	}
	if f.Description != "" {
		about = append(about, f.Description)
	}
	switch {
	case len(f.Enum) > 0:
		about = append(about, "one of "+strings.Join(f.Enum, ", "))
	case f.Type == "boolean":
		about = append(about, "yes or no")
	case f.Type == "integer":
		about = append(about, "an integer")
	case f.Type == "number":
		about = append(about, "a number")
	}
	if !f.Required {
		about = append(about, "optional")
	}
	p := f.Name
	if len(about) > 0 {
		p += " (" + strings.Join(about, "; ") + ")"
	}
	if f.Default != nil {
		d := fmt.Sprint(f.Default)
		if b, ok := f.Default.(bool); ok {
			d = map[bool]string{true: "yes", false: "no"}[b]
		}
		p += " [" + d + "]"
	}
	return p
}

// fieldValue reads a field's answer: an empty line is its default (or,
// with none, no value: ok false, an error when it is required).
func fieldValue(f mcp.Field, line string) (v any, ok bool, err error) {
	line = strings.TrimSpace(line)
	if line == "" {
		switch {
		case f.Default != nil:
			return f.Default, true, nil
		case f.Required:
			return nil, false, fmt.Errorf("%s is required", f.Name)
		}
		return nil, false, nil
	}
	switch {
	case len(f.Enum) > 0:
		for _, e := range f.Enum {
			if e == line {
				return line, true, nil
			}
		}
		return nil, false, fmt.Errorf("%q is not one of %s", line, strings.Join(f.Enum, ", "))
	case f.Type == "boolean":
		switch strings.ToLower(line) {
		case "y", "yes", "true":
			return true, true, nil
		case "n", "no", "false":
			return false, true, nil
		}
		return nil, false, fmt.Errorf("%q is not yes or no", line)
	case f.Type == "integer":
		n, err := strconv.ParseInt(line, 10, 64)
		if err != nil {
			return nil, false, fmt.Errorf("%q is not an integer", line)
		}
		return n, true, nil
	case f.Type == "number":
		n, err := strconv.ParseFloat(line, 64)
		if err != nil {
			return nil, false, fmt.Errorf("%q is not a number", line)
		}
		return n, true, nil
	}
	return line, true, nil
}

// line is the next line typed: from the terminal's shared input when
// there is one (a line goes to the question on the screen, not to chat's
// prompt), else read from in.
func (u *mcpUI) line(ctx context.Context) (string, error) {
	if u.input != nil {
		return u.input.next(ctx)
	}
	return readLine(u.in)
}

func isNo(line string) bool {
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "n" || a == "no"
}

// readLine reads one line, a byte at a time so that nothing after it is
// taken from r; at most 4096 bytes are kept. When r ends before a
// newline, the error is errNoAnswer and the line what came.
func readLine(r io.Reader) (string, error) {
	if r == nil {
		return "", errNoAnswer
	}
	var line []byte
	b := make([]byte, 1)
	for {
		n, err := r.Read(b)
		if n == 1 {
			if b[0] == '\n' {
				return strings.TrimSuffix(string(line), "\r"), nil
			}
			if len(line) < 4096 {
				line = append(line, b[0])
			}
		}
		if err != nil {
			return string(line), errNoAnswer
		}
	}
}
