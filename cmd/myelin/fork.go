package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/history"
)

// This file is run's and chat's --fork ID[@N]: the turns go to a new
// conversation that continues ID from its first N messages (default:
// all), sharing them (agent.Fork, docs/branches.md), so that its first
// request is ID's and the provider's prompt cache holds.

// forkSpec is --fork as parsed: the conversation forked and how many of
// its messages the fork keeps (-1: all).
type forkSpec struct {
	base string
	at   int
}

// parseFork reads --fork's ID[@N].
func parseFork(s string) (forkSpec, error) {
	base, n, hasAt := strings.Cut(s, "@")
	if strings.TrimSpace(base) == "" {
		return forkSpec{}, fmt.Errorf("--fork %q: give the conversation to fork, ID or ID@N (`myelin history list` lists them)", s)
	}
	if !hasAt {
		return forkSpec{base: base, at: -1}, nil
	}
	at, err := strconv.Atoi(n)
	if err != nil || at < 0 {
		return forkSpec{}, fmt.Errorf("--fork %q: after @ give the count of messages the fork keeps, 0 or more (`myelin history show %s` numbers them), or leave @N out for all of them", s, base)
	}
	return forkSpec{base: base, at: at}, nil
}

// checkFork refuses --fork with the flags that pick another conversation
// or a system prompt a fork does not take; given says the command line
// gave --fork (an empty one is refused too).
func (f *agentFlags) checkFork(given bool) error {
	if !given && f.fork == "" {
		return nil
	}
	if _, err := parseFork(f.fork); err != nil {
		return err
	}
	switch {
	case f.cont:
		return fmt.Errorf("--fork %s and --continue: give one of them (--fork starts a new conversation from another, --continue goes on with the most recent)", f.fork)
	case f.conversation != "":
		return fmt.Errorf("--fork %s and --conversation %s: give one of them (--fork starts a new conversation from another, --conversation goes on with one)", f.fork, f.conversation)
	case f.system != "":
		return fmt.Errorf("--fork %s and --system: a fork keeps the system prompt of the conversation it forks, so that its requests are that conversation's", f.fork)
	}
	return nil
}

// forkFrom makes the session's conversation a new fork of spec's and says
// so on stderr: the new id first, as for any new conversation.
func (s *session) forkFrom(ctx context.Context, spec string, stderr io.Writer) error {
	fs, err := parseFork(spec) // checked by checkFork
	if err != nil {
		return err
	}
	id, err := s.agent.Fork(ctx, fs.base, fs.at)
	switch {
	case errors.Is(err, history.ErrNotFound):
		return fmt.Errorf("--fork %s: %w (`myelin history list` lists the conversations)", spec, err)
	case err != nil:
		return fmt.Errorf("--fork %s: %w", spec, err)
	}
	if fs.at < 0 { // all of them: as many as the fork holds
		c, err := s.store.Get(ctx, id)
		if err != nil {
			return fmt.Errorf("--fork %s: reading the fork %s: %w", spec, id, err)
		}
		fs.at = c.Messages
	}
	s.id, s.forked = id, &fs
	fmt.Fprintf(stderr, "conversation %s\n", s.id)
	fmt.Fprintf(stderr, "forked from conversation %s at message %d; %s is left as it is\n", fs.base, fs.at, fs.base)
	return nil
}

// remake makes the session's conversation again after it was dropped (its
// first request never reached the provider): a fork is forked again,
// under the same id, any other made as OpenConversation makes it.
func (s *session) remake(ctx context.Context) error {
	if s.forked == nil {
		return s.agent.OpenConversation(ctx, s.id)
	}
	b, ok := s.store.(history.Brancher)
	if !ok {
		return fmt.Errorf("forking conversation %s: %w", s.forked.base, agent.ErrNoForks)
	}
	_, err := b.Fork(ctx, history.Conversation{ID: s.id, Base: s.forked.base, BaseAt: s.forked.at})
	return err
}
