package main

import (
	"strings"
	"testing"

	"github.com/myelin-run/myelin/provider/providertest"
)

func TestAnUnknownModelsAssumedWindowIsSaidOncePerSession(t *testing.T) {
	dir := workspaceWith(t, nil)
	srv := fakeAnthropic(t, providertest.Step{Text: "one"}, providertest.Step{Text: "two"})
	out, errOut, code := cliIn(t, "first\nsecond\n", "chat", "--workspace", dir, "--model", "local-model")
	if code != 0 || out != "one\ntwo\n" || len(srv.Requests()) != 2 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	want := `the context window of model "local-model" is not known; assuming 32768 tokens (set it with --context-window N)`
	if n := strings.Count(errOut, want); n != 1 {
		t.Fatalf("stderr says the assumed window %d times, want once: %q", n, errOut)
	}
}

func TestAKnownOrGivenWindowIsNotRemarkedOn(t *testing.T) {
	for _, args := range [][]string{
		{"--model", "claude-sonnet-4-5-20250929"},
		{"--model", "local-model", "--context-window", "65536"},
		{},
	} {
		dir := workspaceWith(t, nil)
		fakeAnthropic(t, providertest.Step{Text: "ok"})
		_, errOut, code := cli(t, append([]string{"run", "--workspace", dir}, append(args, "hi")...)...)
		if code != 0 || strings.Contains(errOut, "context window") {
			t.Errorf("%q: exit %d, stderr %q; want 0 and no word of the window", args, code, errOut)
		}
	}
}

func TestContextWindowValuesThatCannotHoldARequestAreRefused(t *testing.T) {
	dir := t.TempDir()
	fakeAnthropic(t, providertest.Step{Text: "never"})
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run", "--context-window", "0", "--workspace", dir, "hi"}, exitUsage, "--context-window 0: give the model's context window as a positive number of tokens"},
		{[]string{"chat", "--context-window=-5", "--workspace", dir}, exitUsage, "--context-window -5: give"},
		{[]string{"run", "--context-window", "8192", "--workspace", dir, "hi"}, 1, "a context window of 8192 tokens for model \"claude-sonnet-4-5\" leaves 0 for the request after 8192 for the answer"},
		{[]string{"run", "--context-window", "4000", "--max-tokens", "3500", "--workspace", dir, "hi"}, 1, "leaves 500 for the request after 3500"},
	} {
		_, errOut, code := cli(t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
}
