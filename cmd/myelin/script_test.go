package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/provider/providertest"
)

// The scenario of issue 5: one script greps, reads and summarizes across
// many files.
func TestCodeExecutionGrepsReadsAndSummarizesInOneCall(t *testing.T) {
	files := map[string]string{}
	for _, name := range []string{"a", "b", "c", "d"} {
		files["notes/"+name+".txt"] = "title " + name + "\nTODO: fix " + name + "\nend\n"
	}
	files["notes/clean.txt"] = "nothing to do\n"
	dir := workspaceWith(t, files)
	code := `
		const g = await tools["workspace--grep"]({pattern: "TODO", path: "notes"});
		const paths = [...new Set(g.structuredContent.matches.map(m => m.path))];
		const reads = await Promise.all(paths.map(path => tools["workspace--read"]({path, limit: 1})));
		for (const [i, r] of reads.entries()) console.log(paths[i], "->", r.content[0].text.split("\n")[0].split("\t")[1]);
		return {files: paths.length}`
	out, errOut, code2 := cli(t, "tool", "call", "code_execution", `{"code":`+quote(code)+`}`, "--workspace", dir)
	if code2 != 0 {
		t.Fatalf("exit %d: %s %s", code2, out, errOut)
	}
	want := "notes/a.txt -> title a\nnotes/b.txt -> title b\nnotes/c.txt -> title c\nnotes/d.txt -> title d\n{\"files\":4}"
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	trace, err := os.ReadFile(filepath.Join(dir, ".myelin", "logs", "trace.log"))
	if err != nil || strings.Count(string(trace), "\n") != 5 || !strings.Contains(string(trace), " workspace--grep input=") {
		t.Errorf("trace log (%v):\n%s", err, trace)
	}
}

func quote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`)
	return `"` + r.Replace(s) + `"`
}

func TestRunOffersCodeExecutionUnlessTurnedOff(t *testing.T) {
	for _, off := range []bool{false, true} {
		dir := workspaceWith(t, nil)
		srv := fakeAnthropic(t, providertest.Step{Text: "ok"})
		args := []string{"run", "--workspace", dir, "hi"}
		if off {
			args = append(args, "--no-code-execution")
		}
		if _, errOut, code := cli(t, args...); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		offered := false
		for _, tl := range srv.Request(0)["tools"].([]any) {
			if tl.(map[string]any)["name"] == "code_execution" {
				offered = true
			}
		}
		if offered == off {
			t.Errorf("--no-code-execution=%v: code_execution offered=%v", off, offered)
		}
	}
}

// A script's own calls are not rounds of the conversation: history holds
// the one code_execution call and its result.
func TestAScriptsCallsAreNotAddedToTheConversation(t *testing.T) {
	dir := workspaceWith(t, map[string]string{"a.txt": "alpha\n", "b.txt": "beta\n"})
	code := `const [a, b] = await Promise.all(["a.txt", "b.txt"].map(path => tools["workspace--read"]({path}))); return [a, b].map(r => r.content[0].text.split("\n")[0].split("\t")[1]).join("+")`
	srv := fakeAnthropic(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "toolu_1", Name: "code_execution", Input: `{"code":` + quote(code) + `}`}}},
		providertest.Step{Text: "done"})
	_, errOut, code2 := cli(t, "run", "--allow", "code_execution", "--workspace", dir, "read both")
	if code2 != 0 {
		t.Fatalf("exit %d: %s", code2, errOut)
	}
	out, _, _ := cli(t, "history", "list", "--workspace", dir)
	if !strings.Contains(out, "\t4 messages\t") {
		t.Errorf("history: %s", out)
	}
	msgs := srv.Request(1)["messages"].([]any)
	last := msgs[len(msgs)-1].(map[string]any)["content"].([]any)
	if len(last) != 1 || last[0].(map[string]any)["content"] != "alpha+beta" {
		t.Errorf("the model got %v", last)
	}
}

func TestScriptLimitsComeFromTheFlags(t *testing.T) {
	dir := workspaceWith(t, nil)
	out, _, code := cli(t, "tool", "call", "code_execution", `{"code":"for (;;) {}"}`, "--workspace", dir, "--script-time", "200ms")
	if code != 1 || !strings.Contains(out, "time limit of 200ms") {
		t.Errorf("exit %d: %q", code, out)
	}
	out, _, code = cli(t, "tool", "call", "code_execution", `{"code":"for (let i = 0; i < 5; i++) await tools['workspace--list']({})"}`, "--workspace", dir, "--script-tool-calls", "3")
	if code != 1 || !strings.Contains(out, "more tool calls than its limit of 3") {
		t.Errorf("exit %d: %q", code, out)
	}
	if _, errOut, code := cli(t, "tool", "list", "--workspace", dir, "--script-memory", "0"); code != 2 || !strings.Contains(errOut, "--script-memory must be positive") {
		t.Errorf("exit %d: %q", code, errOut)
	}
}
