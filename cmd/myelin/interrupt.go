package main

import (
	"context"
	"errors"
	"os"
	"sync"
	"syscall"
)

// Ctrl-C (SIGINT) reaches a command as a value of its context — a
// channel of interrupts — rather than as the end of its context, so that
// each command decides what an interrupt ends: chat ends the turn that
// runs and goes back to its prompt (an interrupt at the prompt ends chat),
// run ends its turn and exits 130, as shells expect of a program stopped
// by SIGINT; serve stops gracefully at the first (SIGTERM too), and at
// once at the second; every other command ends at the first one. main puts the
// channel there; a context without one (the tests' run) is never
// interrupted but by its own end.

// stopSignals are the signals main hands to the command args run as
// interrupts: SIGINT for every command, and for the services — serve and
// mcp serve — SIGTERM too: what Docker, systemd and Kubernetes stop a
// service with, and what an MCP host sends a stdio server that has not
// left after its input closed; they take it as they take Ctrl-C (they
// stop gracefully). run and chat are not services: SIGTERM ends them at
// once, as it ends most programs.
func stopSignals(args []string) []os.Signal {
	if len(args) > 0 && args[0] == "serve" || len(args) > 1 && args[0] == "mcp" && args[1] == "serve" {
		return []os.Signal{os.Interrupt, syscall.SIGTERM}
	}
	return []os.Signal{os.Interrupt}
}

// exitInterrupted is the exit status of a command ended by Ctrl-C: 128 +
// SIGINT, what a shell reports for a program SIGINT killed.
const exitInterrupted = 130

// errInterrupted is the cause of a context ended by an interrupt.
var errInterrupted = errors.New("interrupted (Ctrl-C)")

type interruptsKey struct{}

// withInterrupts is ctx carrying c, the interrupts main receives.
func withInterrupts(ctx context.Context, c <-chan os.Signal) context.Context {
	return context.WithValue(ctx, interruptsKey{}, c)
}

// interruptsOf is the interrupts ctx carries, nil for none (a nil
// channel: a select on it never fires).
func interruptsOf(ctx context.Context) <-chan os.Signal {
	c, _ := ctx.Value(interruptsKey{}).(<-chan os.Signal)
	return c
}

// onInterrupt calls cancel with the cause errInterrupted at the next
// interrupt ctx carries, until ctx ends or stop is called; once stop
// returns no interrupt is taken, so one that comes after is left for
// whoever watches next. stop may be called more than once.
func onInterrupt(ctx context.Context, cancel context.CancelCauseFunc) (stop func()) {
	c := interruptsOf(ctx)
	if c == nil {
		return func() {}
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		select {
		case <-c:
			cancel(errInterrupted)
		case <-ctx.Done():
		case <-done:
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(done) })
		<-stopped
	}
}

// interruptible is ctx, ended with the cause errInterrupted at the next
// interrupt; end stops the watch and ends the context.
func interruptible(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	stop := onInterrupt(ctx, cancel)
	return ctx, func() {
		stop()
		cancel(nil)
	}
}

// interrupted reports whether ctx ended because of an interrupt.
func interrupted(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), errInterrupted)
}
