package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
)

// A chat turn's end by interrupts, decided where the interrupt comes: a
// Ctrl-C that comes once the turn has ended by itself — its token line
// written, chat not yet back at the prompt — ends chat as at the prompt
// (the turn's own interrupt took it, and chat waited for a line with the
// Ctrl-C lost: TestCtrlCInAChatTurnEndsTheTurnAndAtThePromptEndsChat timed
// out in CI on this race). The turn here is a stand-in that makes the
// interrupt come at that point every time: after its work, before it
// returns.
func TestACtrlCAfterAChatTurnEndedByItselfEndsChatAsAtThePrompt(t *testing.T) {
	for _, tc := range []struct {
		name      string
		interrupt bool // an interrupt comes before run returns
		runCode   int  // what run returns: exitOK, the turn ended by itself
		cancel    bool // chat's own context ends first
		wantCode  int
		wantEnd   bool
		wantAgain bool // "Ctrl-C again at the prompt ends chat" said
	}{
		{name: "after the turn ended by itself: chat ends, 130", interrupt: true, runCode: exitOK, wantCode: exitInterrupted, wantEnd: true},
		{name: "during the turn: the turn ends, chat goes on", interrupt: true, runCode: exitError, wantCode: exitError, wantEnd: false, wantAgain: true},
		{name: "none: chat goes on", runCode: exitOK, wantCode: exitOK, wantEnd: false},
		{name: "a failed turn: chat goes on", runCode: exitError, wantCode: exitError, wantEnd: false},
		{name: "chat's own context ended: chat ends", runCode: exitError, cancel: true, wantCode: exitError, wantEnd: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			interrupts := make(chan os.Signal, 1)
			ctx, cancel := context.WithCancel(withInterrupts(context.Background(), interrupts))
			defer cancel()
			var stderr bytes.Buffer
			run := func(tctx context.Context) int {
				fmt.Fprintln(&stderr, "tokens: the turn's line")
				if tc.interrupt {
					interrupts <- os.Interrupt
					<-tctx.Done() // the turn's watch took it
					if !interrupted(tctx) {
						t.Errorf("the turn's context ended with %v, not by the interrupt", context.Cause(tctx))
					}
				}
				if tc.cancel {
					cancel()
				}
				return tc.runCode
			}
			code, end := (&session{}).chatTurn(ctx, run, &stderr)
			if code != tc.wantCode || end != tc.wantEnd {
				t.Fatalf("chatTurn gave code %d, end %v; want code %d, end %v; stderr:\n%s", code, end, tc.wantCode, tc.wantEnd, stderr.String())
			}
			if again := strings.Contains(stderr.String(), "Ctrl-C again at the prompt ends chat"); again != tc.wantAgain {
				t.Fatalf("stderr says %q: %v, want %v; stderr:\n%s", "Ctrl-C again at the prompt ends chat", again, tc.wantAgain, stderr.String())
			}
			if len(interrupts) != 0 {
				t.Fatalf("the interrupt is still waiting on the channel: the turn's watch did not take it")
			}
		})
	}
}
