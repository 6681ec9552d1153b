package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/myelin-run/myelin/permission"
	"github.com/myelin-run/myelin/provider/providertest"
)

// These tests run the built binary against the scripted provider, on a
// terminal (script(1)) and off one, and check what the policy let the
// model run (SPEC §14, docs/cli.md "What the model may run").

// shellStep is a step whose one call is shell--run of command.
func shellStep(id, command string) providertest.Step {
	return toolCallStep(id, "shell--run", map[string]any{"command": command})
}

// toolResults are the tool results of request i's last message, by call id.
func toolResults(t *testing.T, srv *providertest.Server, i int) map[string]toolResultBlock {
	t.Helper()
	msgs := srv.Request(i)["messages"].([]any)
	out := map[string]toolResultBlock{}
	for _, b := range msgs[len(msgs)-1].(map[string]any)["content"].([]any) {
		m := b.(map[string]any)
		if m["type"] != "tool_result" {
			continue
		}
		r := toolResultBlock{IsError: m["is_error"] == true}
		switch c := m["content"].(type) {
		case string:
			r.Text = c
		case []any:
			for _, part := range c {
				if s, ok := part.(map[string]any)["text"].(string); ok {
					r.Text += s
				}
			}
		}
		out[m["tool_use_id"].(string)] = r
	}
	return out
}

type toolResultBlock struct {
	Text    string
	IsError bool
}

// terminal is myelin run under script(1): a terminal whose screen the
// test reads and on which it types.
type terminal struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	mu     sync.Mutex
	screen bytes.Buffer
	done   chan struct{}
	err    error
}

// onTerminal starts myelin with args on a terminal of its own.
func onTerminal(t *testing.T, args ...string) *terminal {
	t.Helper()
	scriptCmd, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) is not installed (util-linux)")
	}
	line := shellQuote(buildMyelin(t))
	for _, a := range args {
		line += " " + shellQuote(a)
	}
	term := &terminal{t: t, done: make(chan struct{})}
	term.cmd = exec.Command(scriptCmd, "-qec", line, "/dev/null")
	term.cmd.Env = os.Environ()
	if term.in, err = term.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := term.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := term.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := out.Read(buf)
			term.mu.Lock()
			term.screen.Write(buf[:n])
			term.mu.Unlock()
			if err != nil {
				break
			}
		}
		term.err = term.cmd.Wait()
		close(term.done)
	}()
	t.Cleanup(func() {
		select {
		case <-term.done:
		default:
			term.cmd.Process.Kill()
			<-term.done
		}
	})
	return term
}

// shellQuote is s as one word of sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// waitFor waits until the screen shows text n times, and fails the test
// after 30 s.
func (term *terminal) waitFor(text string, n int) {
	term.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if strings.Count(term.text(), text) >= n {
			return
		}
		select {
		case <-term.done:
			if strings.Count(term.text(), text) >= n {
				return
			}
			term.t.Fatalf("myelin ended (%v) before showing %q %d times:\n%s", term.err, text, n, term.text())
		default:
		}
		if time.Now().After(deadline) {
			term.t.Fatalf("no %q (%d times) on the screen after 30s:\n%s", text, n, term.text())
		}
	}
}

func (term *terminal) text() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.screen.String()
}

// typeLine types s and Enter.
func (term *terminal) typeLine(s string) {
	term.t.Helper()
	if _, err := io.WriteString(term.in, s+"\r"); err != nil {
		term.t.Fatal(err)
	}
}

// exit waits for myelin to end and returns its exit status.
func (term *terminal) exit() int {
	term.t.Helper()
	select {
	case <-term.done:
	case <-time.After(60 * time.Second):
		term.t.Fatalf("myelin did not end:\n%s", term.text())
	}
	term.in.Close()
	if ee, ok := term.err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if term.err != nil {
		term.t.Fatal(term.err)
	}
	return 0
}

const question = "Allow it? [y/s/a/n] "

func TestYesOnceOnTheTerminalRunsTheCallAndTheNextSameCallIsAskedAgain(t *testing.T) {
	dir := workspaceWith(t, nil)
	srv := fakeAnthropic(t, shellStep("toolu_1", "echo once >> log"), shellStep("toolu_2", "echo once >> log"), providertest.Step{Text: "done"})
	term := onTerminal(t, "run", "--allow-shell", "--workspace", dir, "log twice")
	term.waitFor(question, 1)
	term.typeLine("y")
	term.waitFor(question, 2)
	term.typeLine("y")
	if code := term.exit(); code != 0 {
		t.Fatalf("exit %d:\n%s", code, term.text())
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "log")); string(b) != "once\nonce\n" {
		t.Fatalf("the log holds %q; want both calls run", b)
	}
	if r := toolResults(t, srv, 2)["toolu_2"]; r.IsError {
		t.Fatalf("the second call's result: %+v", r)
	}
}

func TestYesForTheSessionIsNotAskedAgainInTheProcess(t *testing.T) {
	dir := workspaceWith(t, nil)
	fakeAnthropic(t, shellStep("toolu_1", "echo s >> log"), shellStep("toolu_2", "echo s >> log"), providertest.Step{Text: "done"})
	term := onTerminal(t, "run", "--allow-shell", "--workspace", dir, "log twice")
	term.waitFor(question, 1)
	term.typeLine("s")
	if code := term.exit(); code != 0 {
		t.Fatalf("exit %d:\n%s", code, term.text())
	}
	if n := strings.Count(term.text(), question); n != 1 {
		t.Fatalf("asked %d times; want once, the session's answer taking the second call:\n%s", n, term.text())
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "log")); string(b) != "s\ns\n" {
		t.Fatalf("the log holds %q; want both calls run", b)
	}
}

func TestAlwaysIsWrittenToTheUsersFileAndNotAskedInANewProcess(t *testing.T) {
	user := userRules(t, "")
	dir := workspaceWith(t, nil)
	srv := fakeAnthropic(t, shellStep("toolu_1", "echo always >> log"), providertest.Step{Text: "done"})
	term := onTerminal(t, "run", "--allow-shell", "--workspace", dir, "log")
	term.waitFor(question, 1)
	if !strings.Contains(term.text(), fmt.Sprintf(`a  always: add "echo always" to %s`, user)) {
		t.Errorf("the question does not say where always is written:\n%s", term.text())
	}
	term.typeLine("a")
	if code := term.exit(); code != 0 {
		t.Fatalf("exit %d:\n%s", code, term.text())
	}
	b, err := os.ReadFile(user)
	if err != nil || !strings.Contains(string(b), `"echo always"`) {
		t.Fatalf("the user's file holds %q (%v); want the rule", b, err)
	}
	// off a terminal, where what is asked is denied: it runs unasked
	srv.Push(shellStep("toolu_2", "echo always >> log"), providertest.Step{Text: "again"})
	if _, errOut, code := cli(t, "run", "--allow-shell", "--workspace", dir, "log again"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if r := toolResults(t, srv, 3)["toolu_2"]; r.IsError {
		t.Fatalf("the rule written did not allow the call in a new process: %+v", r)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "log")); string(b) != "always\nalways\n" {
		t.Fatalf("the log holds %q", b)
	}
}

func TestNoWithAReasonDeniesTheCallAndTheModelGetsTheReason(t *testing.T) {
	dir := workspaceWith(t, nil)
	srv := fakeAnthropic(t, shellStep("toolu_1", "git status && rm -rf x"), providertest.Step{Text: "ok, I won't"})
	if err := os.Mkdir(filepath.Join(dir, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	term := onTerminal(t, "run", "--allow-shell", "--allow", "git status", "--workspace", dir, "clean up")
	term.waitFor(question, 1)
	if !strings.Contains(term.text(), "asked about: rm -rf x") {
		t.Errorf("the question does not say which command asked:\n%s", term.text())
	}
	term.typeLine("n")
	term.waitFor("Why not?", 1)
	term.typeLine("x holds my notes")
	if code := term.exit(); code != 0 {
		t.Fatalf("exit %d:\n%s", code, term.text())
	}
	r := toolResults(t, srv, 1)["toolu_1"]
	if !r.IsError || !strings.Contains(r.Text, "x holds my notes") {
		t.Fatalf("the model got %+v; want an error result with the reason", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); err != nil {
		t.Fatalf("the denied command ran: %v", err)
	}
	// the decision is stored with the call: history show prints it over
	// the result, --json keeps it in the part
	id := conversationID(t, strings.ReplaceAll(term.text(), "\r", ""))
	out, _, _ := cli(t, "history", "show", id, "--workspace", dir)
	if !regexp.MustCompile(`\n\[permission: denied by a person \(no\) · \d{4}-\d\d-\d\d \d\d:\d\d:\d\d · x holds my notes\]\n\[tool result toolu_1 error\]\n`).MatchString(out) {
		t.Errorf("history show does not print the decision under the result:\n%s", out)
	}
	out, _, _ = cli(t, "history", "show", id, "--workspace", dir, "--json")
	var msgs []struct {
		Parts []struct {
			CallID     string             `json:"call_id"`
			Type       string             `json:"type"`
			Permission *permission.Record `json:"permission"`
		} `json:"parts"`
	}
	if err := json.Unmarshal([]byte(out), &msgs); err != nil {
		t.Fatalf("history show --json: %v\n%s", err, out)
	}
	var rec *permission.Record
	for _, m := range msgs {
		for _, p := range m.Parts {
			if p.CallID == "toolu_1" && p.Type == "tool_result" {
				rec = p.Permission
			}
		}
	}
	if rec == nil || rec.Decision != "deny" || rec.By != "person" || rec.Answer != "deny" || rec.Reason != "x holds my notes" || rec.At.IsZero() {
		t.Errorf("history show --json keeps %+v in the result's part; want the person's deny, its reason and time", rec)
	}
}

func TestCtrlCDuringTheQuestionEndsTheTurnAndRunsNothing(t *testing.T) {
	dir := workspaceWith(t, nil)
	fakeAnthropic(t, shellStep("toolu_1", "touch ran"), providertest.Step{Text: "never"})
	term := onTerminal(t, "run", "--allow-shell", "--workspace", dir, "touch it")
	term.waitFor(question, 1)
	if _, err := io.WriteString(term.in, "\x03"); err != nil {
		t.Fatal(err)
	}
	if code := term.exit(); code != exitInterrupted {
		t.Fatalf("exit %d, want %d:\n%s", code, exitInterrupted, term.text())
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Fatal("the call ran after Ctrl-C at its question")
	}
}

// In chat the line typed at a question answers it: chat's prompt does not
// take it as the next turn.
func TestInChatTheLineTypedAtAQuestionAnswersIt(t *testing.T) {
	dir := workspaceWith(t, nil)
	srv := fakeAnthropic(t, shellStep("toolu_1", "echo chat >> log"), providertest.Step{Text: "logged"})
	term := onTerminal(t, "chat", "--allow-shell", "--workspace", dir)
	term.waitFor("> ", 1)
	term.typeLine("log it")
	term.waitFor(question, 1)
	term.typeLine("y")
	term.waitFor("logged", 1)
	term.typeLine("/exit")
	if code := term.exit(); code != 0 {
		t.Fatalf("exit %d:\n%s", code, term.text())
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "log")); string(b) != "chat\n" {
		t.Fatalf("the log holds %q", b)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Fatalf("%d requests; want 2 (the answer y was not a turn)", n)
	}
}

func TestOffATerminalWhatIsAskedIsDeniedNamingTheFlagThatAllowsIt(t *testing.T) {
	dir := workspaceWith(t, nil)
	srv := fakeAnthropic(t, providertest.Step{ToolCalls: []providertest.ToolCall{
		{ID: "toolu_sh", Name: "shell--run", Input: `{"command":"touch ran"}`},
		{ID: "toolu_w", Name: "workspace--write", Input: `{"path":"w.txt","content":"x"}`}}},
		providertest.Step{Text: "denied"})
	_, errOut, code := cli(t, "run", "--allow-shell", "--workspace", dir, "do it")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	res := toolResults(t, srv, 1)
	for id, want := range map[string]string{"toolu_sh": "--allow 'touch ran'", "toolu_w": "--allow workspace--write"} {
		if r := res[id]; !r.IsError || !strings.Contains(r.Text, want) {
			t.Errorf("%s: the model got %+v; want a denial naming %s", id, r, want)
		}
	}
	// the user reads it too, on the call's line
	if !strings.Contains(errOut, "· denied: the call of shell--run was denied and did not run") || !strings.Contains(errOut, "--allow 'touch ran'") {
		t.Errorf("stderr does not say the call was denied and what would allow it:\n%s", errOut)
	}
	for _, f := range []string{"ran", "w.txt"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s was made: a denied call ran", f)
		}
	}
}

func TestAWorkspaceFileMayNarrowButNotWiden(t *testing.T) {
	dir := workspaceWith(t, map[string]string{".myelin/permissions.json": `{"allow": ["touch *"], "deny": ["workspace--write"]}`})
	srv := fakeAnthropic(t, providertest.Step{ToolCalls: []providertest.ToolCall{
		{ID: "toolu_sh", Name: "shell--run", Input: `{"command":"touch ran"}`},
		{ID: "toolu_w", Name: "workspace--write", Input: `{"path":"w.txt","content":"x"}`}}},
		providertest.Step{Text: "denied"},
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "toolu_w2", Name: "workspace--write", Input: `{"path":"w.txt","content":"x"}`}}},
		providertest.Step{Text: "denied again"})
	_, errOut, code := cli(t, "run", "--allow-shell", "--workspace", dir, "do it")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, `allow[0]: "touch *" is not taken: a workspace's rules may only narrow what you allow`) {
		t.Errorf("no warning on stderr that the workspace's allow is left out: %s", errOut)
	}
	res := toolResults(t, srv, 1)
	if r := res["toolu_sh"]; !r.IsError {
		t.Errorf("the command the workspace's file allows ran unasked: %+v", r)
	}
	if r := res["toolu_w"]; !r.IsError || !strings.Contains(r.Text, filepath.Join(".myelin", "permissions.json")) {
		t.Errorf("the write the workspace's file denies: %+v; want a denial naming the file", r)
	}
	// its deny holds against what the user allows, --yes included
	if _, errOut, code := cli(t, "run", "--yes", "--allow", "workspace--write", "--workspace", dir, "write it"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if r := toolResults(t, srv, 3)["toolu_w2"]; !r.IsError {
		t.Errorf("the workspace's deny did not hold against --yes and --allow: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "w.txt")); err == nil {
		t.Error("w.txt was written")
	}
}

func TestYesAllowsWhatWouldBeAskedAndDenyBeatsIt(t *testing.T) {
	dir := workspaceWith(t, map[string]string{"keep.txt": "k"})
	srv := fakeAnthropic(t, providertest.Step{ToolCalls: []providertest.ToolCall{
		{ID: "toolu_sh", Name: "shell--run", Input: `{"command":"touch ran"}`},
		{ID: "toolu_w", Name: "workspace--write", Input: `{"path":"w.txt","content":"x"}`},
		{ID: "toolu_rm", Name: "shell--run", Input: `{"command":"rm -f keep.txt"}`}}},
		providertest.Step{Text: "done"})
	_, errOut, code := cli(t, "run", "--allow-shell", "--yes", "--deny", "rm *", "--workspace", dir, "do it")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	res := toolResults(t, srv, 1)
	if res["toolu_sh"].IsError || res["toolu_w"].IsError {
		t.Errorf("--yes did not allow what would be asked: %+v", res)
	}
	if r := res["toolu_rm"]; !r.IsError || !strings.Contains(r.Text, "rm *") {
		t.Errorf("--deny 'rm *' with --yes: the model got %+v; want a denial naming the rule", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "keep.txt")); err != nil {
		t.Errorf("the denied rm ran: %v", err)
	}
	out, _, _ := cli(t, "history", "show", conversationID(t, errOut), "--workspace", dir)
	for _, want := range []string{"\n[permission: allowed by --yes · ", "\n[permission: denied by the rule rm * (flag --deny) · "} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in history show:\n%s", want, out)
		}
	}
}

func TestACompoundCommandIsAsAllowedAsItsLeastAllowedPart(t *testing.T) {
	dir := workspaceWith(t, nil)
	if err := os.Mkdir(filepath.Join(dir, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	srv := fakeAnthropic(t, shellStep("toolu_1", "git status && rm -rf x"), providertest.Step{Text: "denied"},
		shellStep("toolu_2", "git status; true"), providertest.Step{Text: "denied"})
	if _, errOut, code := cli(t, "run", "--allow-shell", "--allow", "git status", "--workspace", dir, "clean"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if r := toolResults(t, srv, 1)["toolu_1"]; !r.IsError || !strings.Contains(r.Text, "rm -rf x") {
		t.Errorf("the model got %+v; want a denial naming the part rm -rf x", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); err != nil {
		t.Errorf("the rm ran: %v", err)
	}
	// every part allowed: it runs (git status fails outside a repository: it ran)
	if _, errOut, code := cli(t, "run", "--allow-shell", "--allow", "git status", "--allow", "true", "--workspace", dir, "status"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if r := toolResults(t, srv, 3)["toolu_2"]; strings.Contains(r.Text, "denied") {
		t.Errorf("a line of allowed commands was denied: %+v", r)
	}
}

// A script's own call is checked as the model's is: code_execution allowed
// does not allow what the script calls.
func TestAScriptsToolCallIsCheckedLikeTheModelsOwn(t *testing.T) {
	dir := workspaceWith(t, nil)
	code := `const r = await tools["workspace--write"]({path: "w.txt", content: "x"}); return (r.isError ? "error: " : "ok: ") + r.content[0].text`
	step := providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "toolu_1", Name: "code_execution", Input: `{"code":` + quote(code) + `}`}}}
	srv := fakeAnthropic(t, step, providertest.Step{Text: "denied"}, step, providertest.Step{Text: "written"})
	if _, errOut, code := cli(t, "run", "--allow", "code_execution", "--workspace", dir, "write"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if r := toolResults(t, srv, 1)["toolu_1"]; !strings.Contains(r.Text, "error: ") || !strings.Contains(r.Text, "--allow workspace--write") {
		t.Errorf("the script's write: %+v; want it denied, naming --allow workspace--write", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "w.txt")); err == nil {
		t.Fatal("the script's denied write ran")
	}
	if _, errOut, code := cli(t, "run", "--allow", "code_execution", "--allow", "workspace--write", "--workspace", dir, "write"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if r := toolResults(t, srv, 3)["toolu_1"]; !strings.Contains(r.Text, "ok: ") {
		t.Errorf("the script's allowed write: %+v", r)
	}
}
