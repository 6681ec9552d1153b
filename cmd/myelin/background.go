package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/background"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/script"
	"github.com/myelin-run/myelin/tool"
)

// backgroundFlags bound the background scripts of run and chat
// (code_execution {background: true}, docs/scripts.md).
type backgroundFlags struct {
	running  int
	total    int
	wakes    int
	gap      time.Duration
	lifetime time.Duration
}

func (f *backgroundFlags) add(fs *flag.FlagSet) {
	fs.IntVar(&f.running, "background-scripts", background.DefaultRunning, "the most background scripts running at once in one conversation")
	fs.IntVar(&f.total, "background-scripts-total", background.DefaultTotal, "the most background scripts running at once in this process, all conversations together (`N`, below --script-engines)")
	fs.IntVar(&f.wakes, "background-wakes", background.DefaultWakes, "the most times one background script may wake the agent")
	fs.DurationVar(&f.gap, "wake-gap", background.DefaultGap, "the least time between two wakes of one background script, a `duration` (0: none); an early wake is held, never dropped")
	fs.DurationVar(&f.lifetime, "background-lifetime", background.DefaultLifetime, "how long a background script may run, a `duration`")
}

// limits are the limits the flags give, checked.
func (f *backgroundFlags) limits() (background.Limits, error) {
	switch {
	case f.running <= 0:
		return background.Limits{}, fmt.Errorf("--background-scripts %d: give 1 or more (default %d)", f.running, background.DefaultRunning)
	case f.total <= 0:
		return background.Limits{}, fmt.Errorf("--background-scripts-total %d: give 1 or more (default %d)", f.total, background.DefaultTotal)
	case f.wakes <= 0:
		return background.Limits{}, fmt.Errorf("--background-wakes %d: give 1 or more (default %d)", f.wakes, background.DefaultWakes)
	case f.gap < 0:
		return background.Limits{}, fmt.Errorf("--wake-gap %v: give 0 or more (default %v)", f.gap, background.DefaultGap)
	case f.lifetime <= 0:
		return background.Limits{}, fmt.Errorf("--background-lifetime %v: give a positive duration (default %v)", f.lifetime, background.DefaultLifetime)
	}
	l := background.Limits{Running: f.running, Total: f.total, Wakes: f.wakes, Gap: f.gap, Lifetime: f.lifetime}
	if l.Gap == 0 {
		l.Gap = background.NoGap
	}
	return l, nil
}

// fit refuses a total of background scripts that could hold every one of
// the process's engines: a script of a call would then wait for hours.
func (f *backgroundFlags) fit(engines int) error {
	if f.total >= engines {
		return fmt.Errorf("--background-scripts-total %d is not below --script-engines %d: background scripts, which hold their engines for hours, must leave one to the scripts of calls; lower the first or raise the second", f.total, engines)
	}
	return nil
}

// backgroundSetup is what a command that runs background scripts gives
// openToolset: their limits, and where their wakes go (chat's queue, or
// serve's HTTP API, which runs the woken turns itself).
type backgroundSetup struct {
	limits background.Limits
	wakes  background.Waker
}

// withBackground makes the background scripts' Manager over c (code
// execution's configuration) the first time, registers
// code_execution--list and --cancel in reg, and returns c with the
// Manager as its Launcher. A registry built again when the servers' tools
// change (toolset.refresh) gets the same Manager, whose scripts keep the
// tools of the first registry.
func (ts *toolset) withBackground(reg *tool.Registry, setup *backgroundSetup, c script.Config) (script.Config, error) {
	if ts.bg == nil {
		m, err := background.New(background.Config{Script: c, Root: ts.ws.Dir(), Env: ts.env, Limits: setup.limits, Waker: setup.wakes})
		if err != nil {
			return c, err
		}
		ts.bg = m
		ts.wakes, _ = setup.wakes.(*background.Queue)
	}
	if err := reg.Add(ts.bg.Tools()...); err != nil {
		return c, err
	}
	c.Background = ts.bg
	return c, nil
}

// backgroundTurn is the prompt of a turn of the session's conversation: a
// note of the scripts a restart took away goes first, once. told is called
// once the prompt is stored. (The scripts a turn's calls start are the
// conversation's: the agent gives each call its conversation,
// tool.ConversationOf.)
func (s *session) backgroundTurn(prompt string) (string, func(agent.Event)) {
	if s.tools == nil || s.tools.bg == nil {
		return prompt, func(agent.Event) {}
	}
	note, told := s.tools.bg.Gone(s.id)
	if note == "" {
		return prompt, func(agent.Event) {}
	}
	once := false
	return note + "\n\n" + prompt, func(e agent.Event) {
		if !once && e.Kind == agent.Stored && e.Message != nil && e.Message.Role == history.User {
			once = true
			told()
		}
	}
}

// stopBackground says which background scripts stop as the command ends.
func (s *session) stopBackground(stderr io.Writer) {
	if s.tools == nil || s.tools.bg == nil {
		return
	}
	if n := s.tools.bg.Running(); n > 0 {
		fmt.Fprintf(stderr, "myelin: stopping %d background script(s) as myelin ends; the conversation is told they are gone at its next turn\n", n)
	}
}

// chatLoop is chat: a turn per line of stdin, and, with background scripts,
// a turn per wake as it comes, shown on stderr first. It ends at /exit or
// the end of stdin, which stops the scripts still running, or at Ctrl-C
// at the prompt (exit 130); Ctrl-C during a turn ends that turn only.
func (s *session) chatLoop(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) int {
	// the terminal's lines are shared with the questions asked during a
	// turn (an approval, an elicitation): the line typed goes to the one
	// on the screen
	var in *termInput
	if s.tools != nil && s.tools.ui != nil {
		in = s.tools.ui.input
	}
	if in == nil {
		in = newTermInput(stdin)
	}
	defer in.stop()
	lines := in.channel()
	var ready <-chan struct{}
	if s.tools != nil && s.tools.wakes != nil {
		ready = s.tools.wakes.Ready()
	}
	prompt := isTerminal(stdin)
	turn := func(text string) (int, bool) {
		return s.chatTurn(ctx, func(tctx context.Context) int { return s.turn(tctx, text, stdout, stderr) }, stderr)
	}
	for {
		if prompt {
			fmt.Fprint(stderr, "> ")
		}
		select {
		case <-ctx.Done():
			return exitError
		case <-interruptsOf(ctx):
			// Ctrl-C at the prompt ends chat, as a program SIGINT ends
			if prompt {
				fmt.Fprintln(stderr)
			}
			s.stopBackground(stderr)
			return exitInterrupted
		case <-ready:
			for w, ok := s.tools.wakes.Next(); ok; w, ok = s.tools.wakes.Next() {
				if w.Conversation != s.id {
					continue
				}
				showWake(stderr, w, prompt)
				if code, end := turn(w.Message); end {
					return code
				}
			}
		case line, ok := <-lines:
			if !ok {
				if prompt {
					fmt.Fprintln(stderr)
				}
				s.stopBackground(stderr)
				return exitOK
			}
			switch line = strings.TrimSpace(line); line {
			case "":
				continue
			case "/exit", "/quit":
				s.stopBackground(stderr)
				return exitOK
			}
			if code, end := turn(line); end {
				return code
			}
		}
	}
}

// chatTurn runs one turn of chat (run) that an interrupt ends alone: the
// cut answer is stored and chat goes on; it reports whether chat must end
// (its own context ended), and with what code.
//
// A Ctrl-C that comes once the turn has ended by itself — after its token
// line, before chat is back at the prompt — ends chat, as at the prompt:
// the turn's own interrupt took it, and chat would otherwise wait for a
// line with the Ctrl-C lost.
func (s *session) chatTurn(ctx context.Context, run func(context.Context) int, stderr io.Writer) (int, bool) {
	tctx, end := interruptible(ctx)
	defer end()
	code := run(tctx)
	switch {
	case interrupted(tctx) && code == exitOK && ctx.Err() == nil:
		s.stopBackground(stderr)
		return exitInterrupted, true
	case interrupted(tctx) && ctx.Err() == nil:
		fmt.Fprintln(stderr, "myelin: Ctrl-C again at the prompt ends chat")
	}
	return code, code != exitOK && ctx.Err() != nil
}

// showWake writes a wake on stderr as it comes: who woke the agent, and
// the start of the payload.
func showWake(stderr io.Writer, w background.Wake, prompt bool) {
	if prompt {
		fmt.Fprintln(stderr)
	}
	what := fmt.Sprintf("wake %d of %d", w.N, w.Of)
	if w.Line > 0 {
		what += fmt.Sprintf(", line %d", w.Line)
	}
	if w.Died {
		what = "it died without waking the agent"
	}
	_, payload, _ := strings.Cut(w.Message, "\n")
	fmt.Fprintf(stderr, "myelin: background script %s woke the agent (%s, %s after it started): %s\n", w.Script, what, w.Since.Round(time.Second), oneLine(payload, 200))
}

// toolsetBackground is the part of toolset that background scripts hold.
type toolsetBackground struct {
	bg    *background.Manager
	wakes *background.Queue
}
