package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/workspace"
)

func writeCall(id, path, content string) providertest.ToolCall {
	in, _ := jsonOf(map[string]string{"path": path, "content": content})
	return providertest.ToolCall{ID: id, Name: "workspace--write", Input: in}
}

func editCall(id, path, old, new string) providertest.ToolCall {
	in, _ := jsonOf(map[string]string{"path": path, "old_string": old, "new_string": new})
	return providertest.ToolCall{ID: id, Name: "workspace--edit", Input: in}
}

func jsonOf(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

// storedResults are the tool results of conversation id's stored
// messages, by call id.
func storedResults(t *testing.T, store history.Store, id string) map[string]history.Part {
	t.Helper()
	msgs, err := store.Messages(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]history.Part{}
	for _, m := range msgs {
		for _, p := range m.Parts {
			if p.Type == history.ToolResultPart {
				out[p.CallID] = p
			}
		}
	}
	return out
}

// version is the file version with hash kept in the agent's store, which
// must keep it.
func (r *rig) version(hash string) string {
	r.t.Helper()
	blobs := r.agent.Store.(history.Blobs)
	data, err := blobs.BlobByHash(context.Background(), hash)
	if err != nil {
		r.t.Fatalf("the version %s is not kept: %v", hash, err)
	}
	_, at, err := blobs.BlobAt(context.Background(), r.id, history.FileVersionPath(hash))
	if err != nil || !bytes.Equal(at, data) {
		r.t.Fatalf("the version %s is not kept under the conversation at %s: %v", hash, history.FileVersionPath(hash), err)
	}
	return string(data)
}

func (r *rig) read(name string) string {
	r.t.Helper()
	data, err := os.ReadFile(filepath.Join(r.dir, name))
	if err != nil {
		r.t.Fatal(err)
	}
	return string(data)
}

func TestAWriteOfANewFileIsRecordedOnItsResultWithWhatItWroteKept(t *testing.T) {
	for _, store := range []string{"sqlite", "memory"} {
		t.Run(store, func(t *testing.T) {
			r := newRigOn(t, store, "anthropic")
			r.srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{writeCall("w", "dir/new.txt", "hello\n")}}, providertest.Step{Text: "done"})
			r.turn("write it")
			p := storedResults(t, r.agent.Store, r.id)["w"]
			want := []history.FileChange{{Path: "dir/new.txt", Created: true, After: history.BlobHash([]byte("hello\n"))}}
			if p.IsError || !reflect.DeepEqual(p.Files, want) {
				t.Fatalf("the write's result is %+v, want its files %+v", p, want)
			}
			if got := r.version(p.Files[0].After); got != "hello\n" {
				t.Fatalf("the version kept after the write is %q, want hello", got)
			}
		})
	}
}

func TestAnEditRecordsWhatItReplacedAndWroteBothKept(t *testing.T) {
	r := newRig(t)
	r.write("a.txt", "alpha\nbeta\n")
	r.srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{editCall("e", "a.txt", "beta", "gamma")}}, providertest.Step{Text: "done"})
	r.turn("edit it")
	p := storedResults(t, r.agent.Store, r.id)["e"]
	want := []history.FileChange{{Path: "a.txt", Before: history.BlobHash([]byte("alpha\nbeta\n")), After: history.BlobHash([]byte("alpha\ngamma\n"))}}
	if p.IsError || !reflect.DeepEqual(p.Files, want) {
		t.Fatalf("the edit's result is %+v, want its files %+v", p, want)
	}
	if before, after := r.version(want[0].Before), r.version(want[0].After); before != "alpha\nbeta\n" || after != "alpha\ngamma\n" {
		t.Fatalf("the versions kept are %q and %q, want the file before and after the edit", before, after)
	}
}

func TestAFileOverMaxKeptFileIsWrittenAndRecordedWithoutItsContent(t *testing.T) {
	r := newRig(t)
	big := strings.Repeat("x", history.MaxKeptFile) + "\nold\n"
	r.write("big.txt", big)
	r.srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{editCall("e", "big.txt", "old", "new")}}, providertest.Step{Text: "done"})
	r.turn("edit it")
	p := storedResults(t, r.agent.Store, r.id)["e"]
	want := []history.FileChange{{Path: "big.txt"}}
	if p.IsError || !reflect.DeepEqual(p.Files, want) {
		t.Fatalf("the edit's result is %+v (%s), want its files %+v: the change, no versions", p.Files, p.Text, want)
	}
	if got := r.read("big.txt"); !strings.HasSuffix(got, "\nnew\n") || len(got) != len(big) {
		t.Fatalf("big.txt was not edited: it ends %q", got[len(got)-8:])
	}
}

// failingBlobs is a store whose Blobs refuse every file.
type failingBlobs struct {
	history.Store
	history.Blobs
}

var errFull = errors.New("the disk is full")

func (failingBlobs) PutBlob(context.Context, string, string, []byte) (string, error) {
	return "", errFull
}

func TestAChangeWhoseVersionsCannotBeKeptIsNotMadeAndItsCallSaysSo(t *testing.T) {
	r := newRig(t)
	r.write("a.txt", "as it was\n")
	r.agent.Store = failingBlobs{r.agent.Store, r.agent.Store.(history.Blobs)}
	r.srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{writeCall("w", "new.txt", "x"), editCall("e", "a.txt", "was", "is")}}, providertest.Step{Text: "done"})
	r.turn("change them")
	res := storedResults(t, r.agent.Store, r.id)
	for _, id := range []string{"w", "e"} {
		p := res[id]
		if !p.IsError || !strings.Contains(p.Text, "was not changed") || !strings.Contains(p.Text, errFull.Error()) || p.Files != nil {
			t.Fatalf("call %s's result is %+v, want an error saying the file was not changed, naming the cause, with no files", id, p)
		}
	}
	if _, err := os.Stat(filepath.Join(r.dir, "new.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("new.txt was written: %v", err)
	}
	if got := r.read("a.txt"); got != "as it was\n" {
		t.Fatalf("a.txt holds %q, want it as it was", got)
	}
}

func TestEachCallOfARoundGetsTheFilesItChanged(t *testing.T) {
	r := newRig(t)
	r.write("b.txt", "bee\n")
	r.srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{
		writeCall("w1", "a.txt", "one\n"),
		readCall("r", "b.txt"),
		editCall("e", "b.txt", "bee", "bea"),
		writeCall("w2", "a.txt", "two\n"),
	}}, providertest.Step{Text: "done"})
	r.turn("change them")
	res := storedResults(t, r.agent.Store, r.id)
	h := func(s string) string { return history.BlobHash([]byte(s)) }
	want := map[string][]history.FileChange{
		"w1": {{Path: "a.txt", Created: true, After: h("one\n")}},
		"r":  nil,
		"e":  {{Path: "b.txt", Before: h("bee\n"), After: h("bea\n")}},
		"w2": {{Path: "a.txt", Before: h("one\n"), After: h("two\n")}},
	}
	for id, w := range want {
		if got := res[id].Files; !reflect.DeepEqual(got, w) {
			t.Errorf("call %s's files are %+v, want %+v", id, got, w)
		}
	}
}

// keepWatch is keepSignal that keeps its store's Blobs.
type keepWatch struct {
	keepSignal
	history.Blobs
}

func TestTheResultKeptAsItsCallFinishesCarriesItsFiles(t *testing.T) {
	var r *rig
	var seen []history.Part
	kept := make(chan string, 4)
	wait := waitsForKeep("wait--kept", "w", kept, &r, &seen)
	r = newRig(t, wait)
	r.agent.Store = keepWatch{keepSignal{r.agent.Store, kept}, r.agent.Store.(history.Blobs)}
	r.srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{writeCall("w", "a.txt", "kept\n"), {ID: "slow", Name: "wait--kept", Input: `{}`}}}, providertest.Step{Text: "done"})
	r.turn("write")
	want := []history.FileChange{{Path: "a.txt", Created: true, After: history.BlobHash([]byte("kept\n"))}}
	if len(seen) != 1 || seen[0].CallID != "w" || !reflect.DeepEqual(seen[0].Files, want) {
		t.Fatalf("kept while the round's other call ran: %+v; want w's result with its files %+v", seen, want)
	}
	if got := storedResults(t, r.agent.Store, r.id)["w"].Files; !reflect.DeepEqual(got, want) {
		t.Fatalf("the round stored w's files as %+v, want %+v", got, want)
	}
}

// rewriting is a tool that may run again and writes path through the
// workspace with the context it is given, as workspace--write does.
func rewriting(ws *workspace.Workspace) *tool.Tool {
	t := tool.MustFunc("ws--rewrite", "Writes a file again.", func(ctx context.Context, in workspace.WriteInput) (any, error) {
		return ws.WriteContext(ctx, in)
	})
	t.Rerun = true
	return t
}

func TestACallRunAgainAtRecoveryRecordsTheFilesItChanged(t *testing.T) {
	r := newRig(t)
	r.write("a.txt", "before the crash\n")
	r.agent = r.newAgent(rewriting(r.ws))
	crashedRound(t, r.agent.Store, r.id, []history.Part{callPart("again", "ws--rewrite", `{"path":"a.txt","content":"after\n"}`)})
	if rec, err := r.agent.Recover(context.Background(), r.id); err != nil || rec != (Recovery{Rerun: 1}) {
		t.Fatalf("Recover = %+v, %v", rec, err)
	}
	want := []history.FileChange{{Path: "a.txt", Before: history.BlobHash([]byte("before the crash\n")), After: history.BlobHash([]byte("after\n"))}}
	if got := storedResults(t, r.agent.Store, r.id)["again"].Files; !reflect.DeepEqual(got, want) {
		t.Fatalf("the call run again is answered with files %+v, want %+v", got, want)
	}
	if got := r.version(want[0].Before); got != "before the crash\n" {
		t.Fatalf("the version kept before the rerun is %q", got)
	}
}

// nesting is a tool whose call runs a call of its own, as a script does:
// workspace--write with call id id, on the conversation conv (the call's
// own when conv is "").
func nesting(reg **tool.Registry, id, conv string) *tool.Tool {
	return tool.MustFunc("nest--write", "Writes through a call of its own.", func(ctx context.Context, in workspace.WriteInput) (any, error) {
		if conv != "" {
			ctx = tool.WithConversation(ctx, conv)
		}
		raw, _ := jsonOf(in)
		out := (&tool.Dispatcher{Tools: *reg}).Call(ctx, tool.Call{ID: id, Name: "workspace--write", Input: []byte(raw)})
		if out.IsError {
			return nil, errors.New(out.Text)
		}
		return "nested: " + out.Text, nil
	})
}

func TestAChangeOfANestedCallIsNotRecordedOnTheCallThatRanIt(t *testing.T) {
	for _, tc := range []struct{ name, id, conv string }{
		{"a script's call", "script_1-1", ""},
		// a call of another conversation, whose agent keeps no journal,
		// even of the id of the parent's call
		{"another conversation's call", "n", "another-conversation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			var reg *tool.Registry
			r.agent = r.newAgent(nesting(&reg, tc.id, tc.conv))
			reg = r.agent.Tools
			r.srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "n", Name: "nest--write", Input: `{"path":"a.txt","content":"nested\n"}`}}}, providertest.Step{Text: "done"})
			r.turn("nest")
			p := storedResults(t, r.agent.Store, r.id)["n"]
			if p.IsError || p.Files != nil {
				t.Fatalf("the nesting call's result is %+v, want it to succeed with no files (its nested call's are not its own)", p)
			}
			if got := r.read("a.txt"); got != "nested\n" {
				t.Fatalf("a.txt holds %q, want the nested write made", got)
			}
		})
	}
}

// A subagent's write is recorded on the subagent's conversation, where it
// was made, and not on the parent's call that ran the subagent.
func TestASubagentsChangeIsRecordedOnItsOwnConversationOnly(t *testing.T) {
	r := newRig(t)
	var child string
	sub := tool.MustFunc("sub--run", "Runs a subagent's turn.", func(ctx context.Context, in struct{}) (any, error) {
		p := r.agent
		c := &Agent{Provider: p.Provider, Store: p.Store, Tools: p.Tools, Env: p.Env, Model: p.Model}
		id, err := c.NewConversation(ctx)
		if err != nil {
			return nil, err
		}
		child = id
		tr, err := c.Turn(ctx, id, "write it", nil)
		return tr.Text, err
	})
	r.agent = r.newAgent(sub)
	r.srv.Push(
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "s", Name: "sub--run", Input: `{}`}}},
		providertest.Step{ToolCalls: []providertest.ToolCall{writeCall("cw", "a.txt", "child\n")}},
		providertest.Step{Text: "child done"},
		providertest.Step{Text: "done"})
	r.turn("delegate")
	if p := storedResults(t, r.agent.Store, r.id)["s"]; p.IsError || p.Files != nil {
		t.Fatalf("the parent's call is answered %+v, want no files: the child's write is the child's", p)
	}
	want := []history.FileChange{{Path: "a.txt", Created: true, After: history.BlobHash([]byte("child\n"))}}
	if got := storedResults(t, r.agent.Store, child)["cw"].Files; !reflect.DeepEqual(got, want) {
		t.Fatalf("the child's write is answered with files %+v, want %+v", got, want)
	}
}

// noBlobs is a store that keeps no files: it runs no journal.
type noBlobs struct {
	history.Store
	history.Requests
}

func TestATurnSendsTheSameRequestsWithAndWithoutTheJournal(t *testing.T) {
	for _, wire := range wires() {
		t.Run(wire, func(t *testing.T) {
			var sent [2][][]byte
			for i := range sent {
				r := newWireRig(t, wire)
				if i == 1 {
					r.agent.Store = noBlobs{r.agent.Store, r.agent.Store.(history.Requests)}
				}
				r.id = "the-same-conversation"
				if err := r.agent.OpenConversation(context.Background(), r.id); err != nil {
					t.Fatal(err)
				}
				r.write("b.txt", "bee\n")
				r.srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{writeCall("w", "a.txt", "one\n"), editCall("e", "b.txt", "bee", "bea")}}, providertest.Step{Text: "done"})
				r.turn("change them")
				r.srv.Push(providertest.Step{Text: "again"})
				r.turn("and again")
				files := storedResults(t, r.agent.Store, r.id)["w"].Files
				if (files != nil) != (i == 0) {
					t.Fatalf("run %d: the write's files are %+v; want them with the journal only", i, files)
				}
				sent[i] = r.srv.Requests()
			}
			if len(sent[0]) != 3 || !reflect.DeepEqual(sent[0], sent[1]) {
				t.Fatalf("the requests differ with the journal:\n%s\nwithout:\n%s", bytes.Join(sent[0], []byte("\n")), bytes.Join(sent[1], []byte("\n")))
			}
		})
	}
}

// A call the round gave up on (past its timeout) that goes on and writes
// is refused: its stored result, which says it stopped, has no files.
func TestAWriteOfACallAnsweredAlreadyIsRefused(t *testing.T) {
	r := newRig(t)
	release, wrote := make(chan struct{}), make(chan error, 1)
	late := tool.MustFunc("late--write", "Writes after its time.", func(ctx context.Context, in struct{}) (any, error) {
		<-ctx.Done()
		<-release
		_, err := r.ws.WriteContext(ctx, workspace.WriteInput{Path: "late.txt", Content: "late\n"})
		wrote <- err
		return nil, err
	})
	r.agent = r.newAgent(late)
	r.agent.ToolTimeout = time.Millisecond
	r.srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "l", Name: "late--write", Input: `{}`}}}, providertest.Step{Text: "done"})
	r.turn("write late")
	close(release)
	err := <-wrote
	if err == nil || !strings.Contains(err.Error(), "answered already") {
		t.Fatalf("the late write's error is %v, want one saying its call was answered already", err)
	}
	if _, err := os.Stat(filepath.Join(r.dir, "late.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("late.txt was written after its call was answered: %v", err)
	}
	if p := storedResults(t, r.agent.Store, r.id)["l"]; !p.IsError || p.Files != nil {
		t.Fatalf("the late call is answered %+v, want an error with no files", p)
	}
}
