package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/history"
)

// This file is the reporter: how run and chat show a turn as it goes.

// reporter writes a turn's events: text to stdout, one line per tool call
// and a spinner (when stderr is a terminal) to stderr.
type reporter struct {
	stdout, stderr io.Writer
	mu             sync.Mutex
	midLine        bool // stdout's last write did not end a line
	drawn          bool // a spinner frame is on the screen
	spin           chan struct{}
	spinDone       chan struct{}
	last           history.Usage   // the last request's usage
	answered       int             // how many requests reported usage
	usages         []history.Usage // each request's usage, to price the turn
	showThinking   bool            // thinking goes to stderr (--show-thinking)
	thinking       bool            // a run of thinking is open on stderr
	// status is drawn after the spinner's frame: a call's progress.
	status string
	// running counts the calls in flight by tool name: progress is shown
	// for those only (a notification can come after its call's result).
	running map[string]int
	// paused, when set and true, keeps the spinner off the screen (a
	// question is being asked there).
	paused func() bool
}

func newReporter(stdout, stderr io.Writer) *reporter {
	r := &reporter{stdout: stdout, stderr: stderr}
	if isTerminal(stderr) {
		r.spin, r.spinDone = make(chan struct{}), make(chan struct{})
		go r.spinner()
	}
	return r
}

func (r *reporter) spinner() {
	defer close(r.spinDone)
	frames := `|/-\`
	t := time.NewTicker(120 * time.Millisecond)
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-r.spin:
			r.mu.Lock()
			r.erase()
			r.mu.Unlock()
			return
		case <-t.C:
			r.mu.Lock()
			if !r.midLine && !r.thinking && (r.paused == nil || !r.paused()) {
				if r.status != "" {
					fmt.Fprintf(r.stderr, "\r\x1b[K%c %s", frames[i%len(frames)], r.status)
				} else {
					fmt.Fprintf(r.stderr, "\r%c", frames[i%len(frames)])
				}
				r.drawn = true
			}
			r.mu.Unlock()
		}
	}
}

// erase takes a spinner frame off the screen; r.mu is held.
func (r *reporter) erase() {
	if r.drawn {
		if r.status != "" {
			fmt.Fprint(r.stderr, "\r\x1b[K")
		} else {
			fmt.Fprint(r.stderr, "\r \r")
		}
		r.drawn = false
	}
}

// setStatus has the spinner show line (a call's progress) until the
// call's result comes; on a terminal only, where the spinner runs.
func (r *reporter) setStatus(toolName, line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.spin == nil || r.running[toolName] == 0 {
		return
	}
	r.erase()
	r.status = line
}

// clearLine takes the spinner off the screen and ends a line of text,
// before a question is asked there.
func (r *reporter) clearLine() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.erase()
	r.closeThinking()
	if r.midLine {
		fmt.Fprintln(r.stdout)
		r.midLine = false
	}
}

// notice writes a line of myelin's on stderr, off the spinner's line.
func (r *reporter) notice(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.erase()
	r.closeThinking()
	fmt.Fprintf(r.stderr, "myelin: %s\n", msg)
}

func (r *reporter) stop() {
	if r.spin != nil {
		close(r.spin)
		<-r.spinDone
		r.spin = nil
	}
}

func (r *reporter) endText() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closeThinking()
	if r.midLine {
		fmt.Fprintln(r.stdout)
		r.midLine = false
	}
}

func (r *reporter) event(e agent.Event) {
	switch e.Kind {
	case agent.Thinking:
		r.mu.Lock()
		r.thought(e)
		r.mu.Unlock()
	case agent.TextDelta:
		r.mu.Lock()
		r.erase()
		r.closeThinking()
		io.WriteString(r.stdout, e.Text)
		r.midLine = !strings.HasSuffix(e.Text, "\n")
		r.mu.Unlock()
	case agent.ToolCall:
		r.endText()
		r.mu.Lock()
		if r.running == nil {
			r.running = map[string]int{}
		}
		r.running[e.Call.Name]++
		r.mu.Unlock()
	case agent.ToolResult:
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.running[e.Call.Name] > 0 {
			r.running[e.Call.Name]--
		}
		status := ""
		if e.Output.IsError {
			status = " error"
		}
		denied := deniedText(e.Permission, e.Output.Text)
		if denied != "" {
			status = " · " + denied
		}
		line := fmt.Sprintf("tool %s %s · %s · %d chars%s", e.Call.Name, shortInput(e.Call), duration(e.Elapsed), e.Output.Chars, status)
		if e.Output.SpillPath != "" {
			line += " · spilled to " + e.Output.SpillPath
		}
		r.erase()
		r.status = ""
		r.closeThinking()
		fmt.Fprintln(r.stderr, line)
	case agent.Usage:
		r.mu.Lock()
		r.last, r.answered = e.Usage, r.answered+1
		r.usages = append(r.usages, e.Usage)
		r.mu.Unlock()
	case agent.Notice, agent.Waiting, agent.ContextEdit, agent.Retry:
		r.endText()
		r.mu.Lock()
		r.erase()
		r.mu.Unlock()
		fmt.Fprintf(r.stderr, "myelin: %s\n", e.Text)
	}
}

func duration(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	}
	return d.Round(10 * time.Millisecond).String()
}

// shortInput is a call's input on one line, at most 80 characters.
func shortInput(c history.Part) string {
	s := string(c.Input)
	if s == "" {
		s = c.Text
	}
	return oneLine(s, 80)
}

func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
