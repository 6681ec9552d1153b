package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/myelin-run/myelin/internal/skipped"
	"github.com/myelin-run/myelin/internal/startgc"
	"github.com/myelin-run/myelin/mcp/mcptest"
	"github.com/myelin-run/myelin/provider/providertest"
)

// fakeAnthropic points the CLI at a scripted Anthropic server.
func fakeAnthropic(t *testing.T, steps ...providertest.Step) *providertest.Server {
	t.Helper()
	srv := providertest.NewAnthropic(t, steps...)
	t.Setenv("ANTHROPIC_API_KEY", "test-key")
	t.Setenv("ANTHROPIC_BASE_URL", srv.URL)
	t.Setenv("OPENAI_API_KEY", "")
	return srv
}

func cliIn(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(stdin), &out, &errOut)
	return out.String(), errOut.String(), code
}

func TestRunStreamsTextAndReportsToolsAndTokens(t *testing.T) {
	dir := workspaceWith(t, map[string]string{"a.txt": "alpha\n"})
	srv := fakeAnthropic(t,
		providertest.Step{Text: "Reading.", ToolCalls: []providertest.ToolCall{{ID: "toolu_1", Name: "workspace--read", Input: `{"path":"a.txt"}`}}, Input: 100, Output: 10, CacheWrite: 50},
		providertest.Step{Text: "It says alpha.", Input: 20, Output: 5, CacheRead: 150})
	out, errOut, code := cli(t, "run", "--workspace", dir, "what does a.txt say?")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if out != "Reading.\nIt says alpha.\n" {
		t.Fatalf("stdout %q", out)
	}
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	if !strings.HasPrefix(lines[0], "conversation ") {
		t.Fatalf("stderr %q", errOut)
	}
	if !strings.Contains(errOut, `tool workspace--read {"path":"a.txt"} · `) || !strings.Contains(errOut, "ms · 51 chars") {
		t.Fatalf("stderr %q", errOut)
	}
	// the cost at claude-sonnet-4-5's prices: 100*3 + 10*15 + 50*3.75 +
	// 20*3 + 5*15 + 150*0.3 = 817.5 dollars per million tokens
	if last := lines[len(lines)-1]; last != "tokens: last request 170 of the 200,000-token window (0%); turn: 320 input, 150 of it (47%) read from the cache, 50 written to it; 15 output; cost $0.0008" {
		t.Fatalf("last line %q", last)
	}
	if srv.Request(0)["model"] != defaultAnthropicModel {
		t.Fatalf("model %v", srv.Request(0)["model"])
	}
}

func TestRunReadsThePromptFromStdin(t *testing.T) {
	dir := workspaceWith(t, nil)
	srv := fakeAnthropic(t, providertest.Step{Text: "hi"})
	if _, errOut, code := cliIn(t, "hello from stdin\n", "run", "--workspace", dir); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	msgs := srv.Request(0)["messages"].([]any)
	if text := msgs[0].(map[string]any)["content"].([]any)[0].(map[string]any)["text"]; text != "hello from stdin" {
		t.Fatalf("prompt %v", text)
	}
}

func conversationID(t *testing.T, stderr string) string {
	t.Helper()
	line, _, _ := strings.Cut(stderr, "\n")
	id, ok := strings.CutPrefix(line, "conversation ")
	if !ok {
		t.Fatalf("stderr %q", stderr)
	}
	return id
}

func TestContinueAndConversationGoOnWhereTheyLeftOff(t *testing.T) {
	dir := workspaceWith(t, nil)
	srv := fakeAnthropic(t, providertest.Step{Text: "one"}, providertest.Step{Text: "two"}, providertest.Step{Text: "three"}, providertest.Step{Text: "other"})
	_, errOut, _ := cli(t, "run", "--workspace", dir, "first")
	id := conversationID(t, errOut)
	_, errOut, _ = cli(t, "run", "--continue", "--workspace", dir, "second")
	if conversationID(t, errOut) != id {
		t.Fatal("--continue picked another conversation")
	}
	if n := len(srv.Request(1)["messages"].([]any)); n != 3 {
		t.Fatalf("the continued request has %d messages", n)
	}
	_, errOut, _ = cli(t, "run", "--conversation", id, "--workspace", dir, "third")
	if conversationID(t, errOut) != id || len(srv.Request(2)["messages"].([]any)) != 5 {
		t.Fatal("--conversation did not continue")
	}
	_, errOut, _ = cli(t, "run", "--conversation", "my-own-id", "--workspace", dir, "new")
	if conversationID(t, errOut) != "my-own-id" || len(srv.Request(3)["messages"].([]any)) != 1 {
		t.Fatal("--conversation did not start a new one")
	}
}

func TestRunExitsNonZeroWhenTheProviderFails(t *testing.T) {
	dir := workspaceWith(t, nil)
	fakeAnthropic(t, providertest.Step{Status: 401, ErrorMessage: "invalid x-api-key"})
	_, errOut, code := cli(t, "run", "--workspace", dir, "hello")
	if code == 0 || !strings.Contains(errOut, "invalid x-api-key") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

func TestRunWithoutAKeySaysWhichVariableToSet(t *testing.T) {
	dir := workspaceWith(t, nil)
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("OPENAI_API_KEY", "")
	_, errOut, code := cli(t, "run", "--workspace", dir, "hello")
	if code == 0 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, "set ANTHROPIC_API_KEY") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	_, errOut, _ = cli(t, "run", "--provider", "openai", "--workspace", dir, "hello")
	if !strings.Contains(errOut, "set OPENAI_API_KEY") {
		t.Fatalf("stderr %q", errOut)
	}
}

func TestRunOverTheOpenAIWire(t *testing.T) {
	dir := workspaceWith(t, map[string]string{"a.txt": "alpha\n"})
	srv := providertest.NewOpenAI(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "call_1", Name: "workspace--read", Input: `{"path":"a.txt"}`}}},
		providertest.Step{Text: "alpha it is"})
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("OPENAI_API_KEY", "k")
	t.Setenv("OPENAI_BASE_URL", srv.URL)
	out, errOut, code := cli(t, "run", "--workspace", dir, "--model", "local-model", "read a.txt")
	if code != 0 || out != "alpha it is\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	msgs := srv.Request(1)["messages"].([]any)
	tm := msgs[len(msgs)-1].(map[string]any)
	if tm["role"] != "tool" || tm["content"] != "     1\talpha\n[lines 1-1 of 1 in a.txt; end of file]" || srv.Request(0)["model"] != "local-model" {
		t.Fatalf("tool message %v", tm)
	}
}

func TestChatRunsATurnPerLineUntilExit(t *testing.T) {
	dir := workspaceWith(t, nil)
	srv := fakeAnthropic(t, providertest.Step{Text: "one"}, providertest.Step{Text: "two"})
	out, errOut, code := cliIn(t, "first\n\nsecond\n/exit\nnever\n", "chat", "--workspace", dir)
	if code != 0 || out != "one\ntwo\n" || len(srv.Requests()) != 2 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestHistoryListAndShow(t *testing.T) {
	dir := workspaceWith(t, map[string]string{"a.txt": "alpha\n"})
	fakeAnthropic(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "toolu_1", Name: "workspace--read", Input: `{"path":"a.txt"}`}}, Input: 3, Output: 4},
		providertest.Step{Text: "done"})
	_, errOut, _ := cli(t, "run", "--workspace", dir, "read a.txt please")
	id := conversationID(t, errOut)
	out, _, code := cli(t, "history", "list", "--workspace", dir)
	if code != 0 || !strings.HasPrefix(out, id+"\t") || !strings.Contains(out, "\t4 messages\tread a.txt please") {
		t.Fatalf("list %q", out)
	}
	out, _, code = cli(t, "history", "show", id, "--workspace", dir)
	for _, want := range []string{"read a.txt please", `[tool call toolu_1] workspace--read {"path":"a.txt"}`, "[tool result toolu_1]\n     1\talpha\n[lines 1-1 of 1 in a.txt; end of file]", "[usage: 3 input, 0 cached, 0 cache-written, 4 output; cost $0.0001]" /* 3*$3 + 4*$15 a million */, "done"} {
		if !strings.Contains(out, want) {
			t.Fatalf("show lacks %q:\n%s", want, out)
		}
	}
	out, _, code = cli(t, "history", "show", "--json", id, "--workspace", dir)
	var msgs []map[string]any
	if err := json.Unmarshal([]byte(out), &msgs); err != nil || code != 0 || len(msgs) != 4 {
		t.Fatalf("json %q: %v", out, err)
	}
	if _, errOut, code := cli(t, "history", "show", "nope", "--workspace", dir); code != 1 || !strings.Contains(errOut, "no such conversation") {
		t.Fatalf("exit %d, %q", code, errOut)
	}
}

var built struct {
	once sync.Once
	bin  string
	err  error
	dir  string
}

// buildMyelin builds the binary, once for the tests that need a real
// process.
func buildMyelin(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "myelin-bin-")
		if built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "myelin")
		if out, err := exec.Command("go", "build", "-o", built.bin, ".").CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

func TestMain(m *testing.M) {
	startgc.Done()         // as main does: the tests run with the collector as configured
	mcptest.ServeIfAsked() // this binary is the MCP test server when asked
	// the user's own configuration (their permission rules, their
	// approved .mcp.json files) never reaches a test: each starts empty
	config, err := os.MkdirTemp("", "myelin-config-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("XDG_CONFIG_HOME", config)
	code := skipped.Main(m)
	os.RemoveAll(config)
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// Killed with SIGKILL in the middle of a round, myelin starts again with a
// valid conversation: the interrupted call is answered, not run again.
func TestCrashMidRoundLeavesAValidConversation(t *testing.T) {
	bin := buildMyelin(t)
	dir := workspaceWith(t, nil)
	srv := fakeAnthropic(t, providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "toolu_sleep", Name: "shell--run",
		Input: `{"command":"echo $$ > pid; touch started; sleep 60"}`}}})
	cmd := exec.Command(bin, "run", "--allow-shell", "--allow", "echo *", "--allow", "touch started", "--allow", "sleep 60", "--workspace", dir, "sleep a while")
	cmd.Env = os.Environ()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dir, "started")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the tool never started: %s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if raw, err := os.ReadFile(filepath.Join(dir, "pid")); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(raw))); err == nil {
			syscall.Kill(-pid, syscall.SIGKILL) // the orphaned sleep
		}
	}
	os.Remove(filepath.Join(dir, "started"))

	srv.Push(providertest.Step{Text: "back"})
	out, errOut, code := cli(t, "run", "--continue", "--allow-shell", "--allow", "echo *", "--allow", "touch started", "--allow", "sleep 60", "--workspace", dir, "are you back?")
	if code != 0 || out != "back\n" || !strings.Contains(errOut, "answered 1 tool call(s) interrupted") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "started")); err == nil {
		t.Fatal("the interrupted call was run again")
	}
	msgs := srv.Request(1)["messages"].([]any)
	results := msgs[2].(map[string]any)["content"].([]any)
	res := results[0].(map[string]any)
	if res["tool_use_id"] != "toolu_sleep" || res["is_error"] != true || !strings.Contains(res["content"].(string), "interrupted") {
		t.Fatalf("the interrupted call's result: %v", res)
	}
}

func TestSystemFileSetsTheSystemPromptOfANewConversation(t *testing.T) {
	dir := workspaceWith(t, map[string]string{"sys.txt": "You answer in French."})
	srv := fakeAnthropic(t, providertest.Step{Text: "oui"}, providertest.Step{Text: "encore"})
	_, errOut, code := cli(t, "run", "--workspace", dir, "--system", filepath.Join(dir, "sys.txt"), "hello")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	system := func(i int) any { return srv.Request(i)["system"].([]any)[0].(map[string]any)["text"] }
	if system(0) != "You answer in French." {
		t.Fatalf("system %v", system(0))
	}
	// a continued conversation keeps the prompt it began with
	cli(t, "run", "--workspace", dir, "--continue", "again")
	if system(1) != "You answer in French." {
		t.Fatalf("system %v", system(1))
	}
	if _, errOut, code := cli(t, "run", "--workspace", dir, "--system", filepath.Join(dir, "nope.txt"), "x"); code == 0 || !strings.Contains(errOut, "--system") {
		t.Fatalf("exit %d, %q", code, errOut)
	}
}

// On a terminal a spinner turns on stderr while the model is silent, and
// leaves no trace in the text. script(1) gives the process a terminal.
func TestSpinnerOnATerminalLeavesTheTextIntact(t *testing.T) {
	scriptCmd, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) is not installed (util-linux)")
	}
	bin := buildMyelin(t)
	dir := workspaceWith(t, nil)
	hold := make(chan struct{})
	srv := fakeAnthropic(t, providertest.Step{Text: "There are files.", Hold: hold})
	go func() { // held 1.5 s from the request on, whatever the start took: frames every 120 ms
		for deadline := time.Now().Add(30 * time.Second); len(srv.Requests()) == 0 && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(1500 * time.Millisecond)
		close(hold)
	}()
	cmd := exec.Command(scriptCmd, "-qec", bin+" run --workspace "+dir+" hello", "/dev/null")
	cmd.Env = os.Environ()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	screen := string(out)
	if !strings.ContainsAny(screen, `|/-\`) || !strings.Contains(screen, "\r|") {
		t.Fatalf("no spinner frame in %q", screen)
	}
	if !strings.Contains(screen, "There are files.") || strings.Contains(screen, "There are files.\r \r") {
		t.Fatalf("the spinner marred the text: %q", screen)
	}
}

// Ctrl-C (SIGINT) while the model streams stops the turn with exit 130,
// and the conversation stays valid: the next run continues it, and
// its claim is released (the next run is not refused).
func TestInterruptStopsTheTurnAndLeavesAValidConversation(t *testing.T) {
	bin := buildMyelin(t)
	dir := workspaceWith(t, nil)
	hold := make(chan struct{})
	defer close(hold)
	srv := fakeAnthropic(t, providertest.Step{Text: "never sent", Hold: hold})
	cmd := exec.Command(bin, "run", "--workspace", dir, "hello")
	cmd.Env = os.Environ()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); len(srv.Requests()) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no request: %s", stderr.String())
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	err := cmd.Wait()
	t.Logf("exited %v after the signal", time.Since(t0))
	// 130, as shells expect of a program SIGINT ended (issue 27 §6)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitInterrupted || !strings.Contains(stderr.String(), "myelin: interrupted: the answer as far as it came is stored") {
		t.Fatalf("exit %v, stderr %q; want %d and the words saying it was interrupted", err, stderr.String(), exitInterrupted)
	}
	srv.Push(providertest.Step{Text: "hi again"})
	out, errOut, code := cli(t, "run", "--continue", "--workspace", dir, "still there?")
	if code != 0 || out != "hi again\n" {
		t.Fatalf("exit %d, %q, %q", code, out, errOut)
	}
	// the answer cut before any text is stored as that: the two prompts
	// stay two messages (issue 9 §4)
	msgs := srv.Request(1)["messages"].([]any)
	if len(msgs) != 3 || !strings.Contains(fmt.Sprint(msgs[1]), "[no answer: the request was stopped") {
		t.Fatalf("the continued request: %v", msgs)
	}
}
