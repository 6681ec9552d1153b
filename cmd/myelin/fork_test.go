package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/provider/providertest"
)

// run --fork ID runs the prompt in a new conversation that continues ID
// (its request carries ID's messages first), printing the new id as any
// new conversation's; ID is left as it was. @N forks at message N; chat
// --fork does the same for its turns.
func TestRunAndChatForkRunInANewConversationThatContinuesAnother(t *testing.T) {
	dir := workspaceWith(t, nil)
	srv := fakeAnthropic(t, providertest.Step{Text: "one"}, providertest.Step{Text: "two"}, providertest.Step{Text: "three"}, providertest.Step{Text: "four"})
	_, errOut, _ := cli(t, "run", "--workspace", dir, "first")
	base := conversationID(t, errOut)

	_, errOut, code := cli(t, "run", "--fork", base, "--workspace", dir, "second")
	fork := conversationID(t, errOut)
	if code != exitOK || fork == base || !strings.Contains(errOut, "forked from conversation "+base+" at message 2") {
		t.Fatalf("run --fork: exit %d, conversation %s (base %s), stderr:\n%s", code, fork, base, errOut)
	}
	if n := len(srv.Request(1)["messages"].([]any)); n != 3 {
		t.Fatalf("the fork's request has %d messages; want the base's 2 and the prompt", n)
	}
	if list, _, _ := cli(t, "history", "show", base, "--workspace", dir); strings.Contains(list, "second") {
		t.Fatalf("the base holds the fork's prompt:\n%s", list)
	}

	_, errOut, code = cli(t, "run", "--fork", fork+"@0", "--workspace", dir, "third")
	if code != exitOK || conversationID(t, errOut) == fork || len(srv.Request(2)["messages"].([]any)) != 1 {
		t.Fatalf("run --fork %s@0: exit %d, stderr:\n%s", fork, code, errOut)
	}

	out, errOut, code := cliIn(t, "fourth\n", "chat", "--fork", base+"@2", "--workspace", dir)
	if code != exitOK || out != "four\n" || conversationID(t, errOut) == base || len(srv.Request(3)["messages"].([]any)) != 3 {
		t.Fatalf("chat --fork: exit %d, stdout %q, stderr:\n%s", code, out, errOut)
	}
}

// --fork's bad input is refused saying what was wrong.
func TestForkFlagRefusesBadInputClearly(t *testing.T) {
	dir := workspaceWith(t, map[string]string{"system.txt": "be brief"})
	fakeAnthropic(t, providertest.Step{Text: "never"})
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"run", "--fork", "c1@x", "hi"}, `--fork "c1@x": after @ give the count of messages the fork keeps, 0 or more`},
		{[]string{"run", "--fork", "c1@-1", "hi"}, "0 or more"},
		{[]string{"run", "--fork", "@3", "hi"}, "give the conversation to fork, ID or ID@N"},
		{[]string{"run", "--fork", "", "hi"}, `--fork "": give the conversation to fork`},
		{[]string{"run", "--fork", "c1", "--continue", "hi"}, "--fork c1 and --continue: give one of them"},
		{[]string{"run", "--fork", "c1", "--conversation", "c2", "hi"}, "--fork c1 and --conversation c2: give one of them"},
		{[]string{"run", "--fork", "c1", "--system", filepath.Join(dir, "system.txt"), "hi"}, "a fork keeps the system prompt"},
		{[]string{"run", "--fork", "nope", "hi"}, "--fork nope: forking conversation nope: conversation nope: no such conversation (`myelin history list` lists the conversations)"},
		{[]string{"run", "--fork", "nope@0", "hi"}, "no such conversation"},
		{[]string{"chat", "--fork", "c1@1.5"}, "after @ give the count of messages"},
		{[]string{"serve", "--fork", "c1"}, "--fork is run's and chat's"},
	} {
		_, errOut, code := cli(t, append(tc.args, "--workspace", dir)...)
		if code == exitOK || !strings.Contains(errOut, tc.says) {
			t.Errorf("%q: exit %d, %q; want it refused saying %q", tc.args, code, errOut, tc.says)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".myelin")); err == nil {
		if list, _, _ := cli(t, "history", "list", "--workspace", dir); strings.Contains(list, "messages") {
			t.Errorf("a refused --fork left a conversation:\n%s", list)
		}
	}
}
