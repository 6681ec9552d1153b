package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/provider/providertest"
)

// myelinRun runs the built binary with args and returns its stdout,
// stderr and exit status.
func myelinRun(t *testing.T, bin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = os.Environ()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

var conversationLine = regexp.MustCompile(`(?m)^conversation (\S+)$`)

// lastMessages is request i's messages, cache marks stripped, as JSON.
func lastMessages(srv *providertest.Server, i int) []any {
	return providertest.StripCacheMarks(srv.Request(i)["messages"]).([]any)
}

// With --refusal-guard, a refusal of a round's results is met by sending
// the request once more with the results withheld; the history shows the
// originals and the placeholders; a later run (a new process) sends the
// placeholders byte for byte (issue 17 §2).
func TestTheBuiltBinaryWithholdsARefusedRoundAndSendsItAgain(t *testing.T) {
	bin := buildMyelin(t)
	dir := workspaceWith(t, map[string]string{"a.txt": "the secret recipe\n"})
	srv := fakeAnthropic(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "toolu_1", Name: "workspace--read", Input: `{"path":"a.txt"}`}}},
		providertest.Step{Text: "I can't help with that.", Refuse: true},
		providertest.Step{Text: "The file could not be shown."},
	)
	out, errOut, code := myelinRun(t, bin, "run", "--refusal-guard", "--workspace", dir, "read a.txt")
	if code != 0 || !strings.HasSuffix(out, "The file could not be shown.\n") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if !strings.Contains(errOut, `myelin: the model refused to go on (stop reason "refusal") after reading a round's results; the refusal guard withheld the round's 1 result`) {
		t.Fatalf("stderr %q", errOut)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Fatalf("%d requests, want 3", n)
	}
	const file = ".myelin/tool-results/withheld-toolu_1.txt"
	withheld := lastMessages(srv, 2)[2].(map[string]any)["content"].([]any)[0].(map[string]any)["content"].(string)
	if !strings.Contains(withheld, "withheld after a refusal") || !strings.Contains(withheld, "The tool has already run") || !strings.Contains(withheld, file) || strings.Contains(withheld, "secret recipe") {
		t.Fatalf("the result sent again: %q", withheld)
	}
	kept, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil || !strings.Contains(string(kept), "the secret recipe") {
		t.Fatalf("the withheld file holds %q (%v)", kept, err)
	}

	m := conversationLine.FindStringSubmatch(errOut)
	if m == nil {
		t.Fatalf("no conversation id in %q", errOut)
	}
	show, errShow, code := myelinRun(t, bin, "history", "show", m[1], "--workspace", dir)
	for _, want := range []string{
		"the secret recipe", // the original, as stored
		"withheld from requests after a refusal at message 4",
		"[withheld from requests from here on after a refusal (the refusal guard): 1 result",
		"toolu_1  result  ",
		file,
		"[the refused answer, stop reason \"refusal\", never sent:]\nI can't help with that.",
		"The file could not be shown.",
	} {
		if !strings.Contains(show, want) {
			t.Fatalf("history show (exit %d, %s) lacks %q:\n%s", code, errShow, want, show)
		}
	}

	// A new process continues: the earlier messages go byte for byte as
	// the guarded request sent them, placeholders and all.
	srv.Push(providertest.Step{Text: "next"})
	if out, errOut, code := myelinRun(t, bin, "run", "--continue", "--refusal-guard", "--workspace", dir, "and now?"); code != 0 || out != "next\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	guardedReq, _ := json.Marshal(lastMessages(srv, 2))
	next := lastMessages(srv, 3)
	replayed, _ := json.Marshal(next[:len(lastMessages(srv, 2))])
	if string(guardedReq) != string(replayed) {
		t.Fatalf("after a restart the earlier messages changed:\n%s\n%s", guardedReq, replayed)
	}
}

// A second refusal, with the results withheld, ends the turn with a clear
// reason; the conversation stays valid for the next run.
func TestTheBuiltBinaryEndsTheTurnAtASecondRefusal(t *testing.T) {
	bin := buildMyelin(t)
	dir := workspaceWith(t, map[string]string{"a.txt": "alpha\n"})
	srv := fakeAnthropic(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "toolu_1", Name: "workspace--read", Input: `{"path":"a.txt"}`}}},
		providertest.Step{Refuse: true},
		providertest.Step{Text: "Still no.", Refuse: true},
	)
	out, errOut, code := myelinRun(t, bin, "run", "--refusal-guard", "--workspace", dir, "read a.txt")
	if code != 0 || out != "Still no.\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if !strings.Contains(errOut, `myelin: the model refused again (stop reason "refusal") with the round's results withheld, so the turn ends`) {
		t.Fatalf("stderr %q", errOut)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Fatalf("%d requests, want 3: one retry only", n)
	}
	srv.Push(providertest.Step{Text: "ok"})
	if out, errOut, code := myelinRun(t, bin, "run", "--continue", "--workspace", dir, "never mind"); code != 0 || out != "ok\n" {
		t.Fatalf("the next run: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	body, _ := json.Marshal(lastMessages(srv, 3))
	if strings.Contains(string(body), "alpha") || !strings.Contains(string(body), "withheld after a refusal") || !strings.Contains(string(body), "Still no.") {
		t.Fatalf("the next run sent %s", body)
	}
}

// Off by default: a refusal ends the turn as any answer does.
func TestWithoutRefusalGuardARefusalIsAnAnswer(t *testing.T) {
	dir := workspaceWith(t, map[string]string{"a.txt": "alpha\n"})
	srv := fakeAnthropic(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "toolu_1", Name: "workspace--read", Input: `{"path":"a.txt"}`}}},
		providertest.Step{Text: "No.", Refuse: true},
	)
	out, errOut, code := cli(t, "run", "--workspace", dir, "read a.txt")
	if code != 0 || out != "No.\n" || strings.Contains(errOut, "withheld") || len(srv.Requests()) != 2 {
		t.Fatalf("exit %d, stdout %q, stderr %q, %d requests", code, out, errOut, len(srv.Requests()))
	}
}

func TestRunChatAndServeTakeRefusalGuard(t *testing.T) {
	for _, name := range []string{"run", "chat", "serve"} {
		out, errOut, _ := cli(t, name, "--help")
		if !strings.Contains(out+errOut, "-refusal-guard") {
			t.Errorf("%s --help does not offer --refusal-guard", name)
		}
	}
}
