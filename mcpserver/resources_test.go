package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/myelin-run/myelin/approval"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/permission"
	"github.com/myelin-run/myelin/result"
)

// resourceURIs lists the resources, every page, or fails the test.
func resourceURIs(t *testing.T, cs *sdk.ClientSession) []string {
	t.Helper()
	var out []string
	for r, err := range cs.Resources(context.Background(), nil) {
		if err != nil {
			t.Fatalf("listing resources: %v", err)
		}
		out = append(out, r.URI)
	}
	return out
}

// read reads uri; the error is the test's to judge.
func read(cs *sdk.ClientSession, uri string) (*sdk.ReadResourceResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	return cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
}

// readText reads uri's one text, or fails the test.
func readText(t *testing.T, cs *sdk.ClientSession, uri string) string {
	t.Helper()
	res, err := read(cs, uri)
	if err != nil {
		t.Fatalf("reading %s: %v", uri, err)
	}
	if len(res.Contents) != 1 {
		t.Fatalf("reading %s gave %d contents, want one", uri, len(res.Contents))
	}
	return res.Contents[0].Text
}

// A call that spills adds its spill file to the resources (the host is
// told the list changed), as a file:// URI in the workspace; reading it
// gives the head of the file, cut at a line end, and the workspace--read
// call that reads on from the next line.
func TestASpillFileIsListedAndReadAsItsHeadWithTheCallThatReadsOn(t *testing.T) {
	ws := openWorkspace(t)
	var b strings.Builder
	for i := 1; i <= 400; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	s := New(Config{Tools: registry(t, rawTool("test--big", result.Result{Data: b.String()})), Workspace: ws,
		Env: result.Env{Store: ws, Limits: result.Limits{Agent: 1000}}})
	changed := make(chan struct{}, 8)
	cs := connectAt(t, s, &sdk.ClientOptions{ResourceListChangedHandler: func(context.Context, *sdk.ResourceListChangedRequest) { changed <- struct{}{} }}, hostVersion)
	if got := resourceURIs(t, cs); len(got) != 0 {
		t.Fatalf("before any call the resources are %v, want none", got)
	}
	spill := regexp.MustCompile(`\.myelin/tool-results/[A-Za-z0-9._-]+\.txt`).FindString(textOf(call(t, cs, "test--big", nil)))
	receive(t, changed, "notifications/resources/list_changed after the spill")
	uri := fileURI(ws.Dir(), spill)
	if got := resourceURIs(t, cs); len(got) != 1 || got[0] != uri {
		t.Fatalf("the resources are %v, want the spill file %s", got, uri)
	}
	text := readText(t, cs, uri)
	m := regexp.MustCompile(`shown are its first (\d+) lines .* workspace--read (\{.*\})`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("the spill file read as %q, want its head and the call that reads on", text)
	}
	n, _ := strconv.Atoi(m[1])
	var next struct {
		Path   string `json:"path"`
		Offset int    `json:"offset"`
	}
	if err := json.Unmarshal([]byte(m[2]), &next); err != nil || next.Path != spill || next.Offset != n+1 {
		t.Errorf("the call that reads on is %s, want path %s and offset %d", m[2], spill, n+1)
	}
	if !strings.HasPrefix(text, "line 1\n") || !strings.Contains(text, fmt.Sprintf("line %d\n[myelin:", n)) || n < 80 {
		t.Errorf("the head is not the file's first %d lines cut at a line end: %q", n, text)
	}
}

// Any file of the workspace is read by its file:// URI: a text file
// whole, a file that is not text as a blob, a long line up to the cap
// with the call that reads on by character; a relative symbolic link
// within the workspace is followed (as by the workspace tools: os.Root). A path with `..`, a symbolic link that leads
// out, a directory, and a file outside the workspace are refused, and
// nothing of the file outside is given.
func TestAWorkspaceFileIsReadByItsURIAndNothingOutside(t *testing.T) {
	ws := openWorkspace(t)
	outside := filepath.Join(t.TempDir(), "secret.txt")
	write := func(p, data string) {
		t.Helper()
		full := filepath.Join(ws.Dir(), p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("notes/a b.txt", "alpha\nbeta\n")
	write("long.txt", strings.Repeat("x", 5000))
	png := "\x89PNG\r\n\x1a\n\x00\x00\x00binary"
	write("img.png", png)
	if err := os.WriteFile(outside, []byte("the secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, to := range map[string]string{"out.txt": outside, "in.txt": "notes/a b.txt"} {
		if err := os.Symlink(to, filepath.Join(ws.Dir(), link)); err != nil {
			t.Fatal(err)
		}
	}
	s := New(Config{Workspace: ws, Env: result.Env{Store: ws, Limits: result.Limits{Agent: 1000}}})
	cs := connectAt(t, s, nil, hostVersion)
	if got := readText(t, cs, fileURI(ws.Dir(), "notes/a b.txt")); got != "alpha\nbeta\n" {
		t.Errorf("notes/a b.txt read as %q", got)
	}
	if got := readText(t, cs, fileURI(ws.Dir(), "in.txt")); got != "alpha\nbeta\n" {
		t.Errorf("a link within the workspace read as %q", got)
	}
	long := readText(t, cs, fileURI(ws.Dir(), "long.txt"))
	if !strings.HasPrefix(long, strings.Repeat("x", 1000)+"\n[myelin:") || !strings.Contains(long, `workspace--read {"offsetChars":1000,"path":"long.txt"}`) {
		t.Errorf("a long line read as %q, want 1000 characters and the call that reads on", long)
	}
	res, err := read(cs, fileURI(ws.Dir(), "img.png"))
	if err != nil || len(res.Contents) != 1 || !bytes.Equal(res.Contents[0].Blob, []byte(png)) || res.Contents[0].MIMEType != "image/png" {
		t.Errorf("img.png read as %+v (%v), want its bytes as an image/png blob", res, err)
	}
	for _, uri := range []string{
		fileRootURI(ws.Dir()) + "/notes/../../" + filepath.Base(filepath.Dir(outside)) + "/secret.txt",
		fileURI(ws.Dir(), "out.txt"),
		fileURI(ws.Dir(), "notes"),
		"file://" + outside,
	} {
		res, err := read(cs, uri)
		if err == nil {
			t.Errorf("%s read as %+v, want it refused", uri, res.Contents)
			continue
		}
		if strings.Contains(err.Error(), "the secret") {
			t.Errorf("%s: the refusal %q holds the file outside", uri, err)
		}
	}
	if _, err := read(cs, fileURI(ws.Dir(), "out.txt")); err == nil || !strings.Contains(err.Error(), "leads outside the workspace") {
		t.Errorf("the link leading out was refused with %v, want it to say it leads outside", err)
	}
}

// The store's conversations are listed as myelin://conversations/{id}
// and read as JSON: the record and the messages exactly as stored, a
// page at a time within the round bound, next naming the next page.
func TestAConversationIsListedAndReadAsStoredPageByPage(t *testing.T) {
	st := &history.Memory{}
	ctx := context.Background()
	if err := st.Create(ctx, history.Conversation{ID: "c1", System: "be brief"}); err != nil {
		t.Fatal(err)
	}
	for i := range 7 {
		m := history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: fmt.Sprintf("message %d %s", i, strings.Repeat("w", 1500))}}}
		if err := st.Append(ctx, "c1", m); err != nil {
			t.Fatal(err)
		}
	}
	stored, _ := st.Messages(ctx, "c1")
	s := New(Config{Store: st, Env: result.Env{Limits: result.Limits{Agent: 1000}}}) // pages of 4000 characters
	cs := connectAt(t, s, nil, hostVersion)
	if got := resourceURIs(t, cs); len(got) != 1 || got[0] != "myelin://conversations/c1" {
		t.Fatalf("the resources are %v, want the conversation", got)
	}
	var got []json.RawMessage
	pages := 0
	for uri := "myelin://conversations/c1"; uri != ""; pages++ {
		var page ConversationPage
		if err := json.Unmarshal([]byte(readText(t, cs, uri)), &page); err != nil {
			t.Fatalf("%s is not a page: %v", uri, err)
		}
		if page.Conversation.ID != "c1" || page.Conversation.System != "be brief" || page.Total != 7 || page.From != len(got) {
			t.Errorf("%s holds %+v, want c1's record from message %d of 7", uri, page, len(got))
		}
		if len(page.Messages) == 0 || len(page.Messages) > 2 {
			t.Errorf("%s holds %d messages, want 1 or 2 within the bound", uri, len(page.Messages))
		}
		got = append(got, page.Messages...)
		uri = page.Next
		if pages > 7 {
			t.Fatal("the pages do not end")
		}
	}
	want, _ := json.Marshal(stored)
	all, _ := json.Marshal(got)
	if !bytes.Equal(all, want) {
		t.Errorf("the pages hold %s, want the messages as stored %s", all, want)
	}
	if _, err := read(cs, "myelin://conversations/nope"); err == nil {
		t.Error("a conversation not in the store was read")
	}
	if _, err := read(cs, "myelin://conversations/c1?from=9"); err == nil || !strings.Contains(err.Error(), "past the conversation's 7 messages") {
		t.Errorf("a page past the end gave %v, want an error saying so", err)
	}
}

// A host subscribes to a workspace file or a conversation and is told
// when it changes (notifications/resources/updated), until it
// unsubscribes; a subscription to a URI that is not myelin's (the
// conformance fixtures') is taken, and what the server says of it
// reaches the host. Both protocols.
func TestASubscribedResourceTellsTheHostWhenItChanges(t *testing.T) {
	for _, v := range []string{hostVersion, latestVersion} {
		t.Run(v, func(t *testing.T) { subscriptionsAt(t, v) })
	}
}

func subscriptionsAt(t *testing.T, v string) {
	ws := openWorkspace(t)
	st := &history.Memory{}
	ctx := context.Background()
	if err := st.Create(ctx, history.Conversation{ID: "c1"}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(ws.Dir(), "watched.txt")
	if err := os.WriteFile(file, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := New(Config{Workspace: ws, Store: st, Poll: 5 * time.Millisecond, Fixtures: true}) // the fixtures: a resource not myelin's own
	updated := make(chan string, 64)
	cs := connectAt(t, s, &sdk.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) {
		updated <- req.Params.URI
	}}, v)
	if c := cs.InitializeResult().Capabilities.Resources; c == nil || !c.Subscribe || !c.ListChanged {
		t.Errorf("the resources capability is %+v, want subscribe and listChanged", c)
	}
	fileU, convU := fileURI(ws.Dir(), "watched.txt"), "myelin://conversations/c1"
	for _, u := range []string{fileU, convU, "test://watched-resource"} {
		if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: u}); err != nil {
			t.Fatalf("subscribing to %s: %v", u, err)
		}
		// at 2026-07-28 the subscription is a stream the client opens and
		// does not wait for
		waitFor(t, "the subscription to "+u, func() bool {
			s.subs.mu.Lock()
			defer s.subs.mu.Unlock()
			return len(s.subs.by[u]) > 0
		})
	}
	// one change, made whole at once (a rename): os.WriteFile truncates
	// and then writes, and a poll between the two sees a change of its
	// own, a second update the host is rightly told of
	if err := os.WriteFile(file+".new", []byte("two, longer"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(file+".new", file); err != nil {
		t.Fatal(err)
	}
	if u := receive(t, updated, "the file's update"); u != fileU {
		t.Errorf("the host was told %s changed, want %s", u, fileU)
	}
	appendMessage := func() {
		t.Helper()
		if err := st.Append(ctx, "c1", history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "hi"}}}); err != nil {
			t.Fatal(err)
		}
	}
	appendMessage()
	if u := receive(t, updated, "the conversation's update"); u != convU {
		t.Errorf("the host was told %s changed, want %s", u, convU)
	}
	if err := s.sdk.ResourceUpdated(ctx, &sdk.ResourceUpdatedNotificationParams{URI: "test://watched-resource"}); err != nil {
		t.Fatal(err)
	}
	if u := receive(t, updated, "the fixture's update"); u != "test://watched-resource" {
		t.Errorf("the host was told %s changed, want test://watched-resource", u)
	}
	if err := cs.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: fileU}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the end of the subscription to the file", func() bool {
		s.subs.mu.Lock()
		defer s.subs.mu.Unlock()
		return len(s.subs.by[fileU]) == 0
	})
	if err := os.WriteFile(file, []byte("three, longer still"), 0o644); err != nil {
		t.Fatal(err)
	}
	// two more updates of the conversation: the poll that saw the second
	// came after the file's change was there to see
	appendMessage()
	receive(t, updated, "the conversation's second update")
	appendMessage()
	receive(t, updated, "the conversation's third update")
	close(updated)
	for u := range updated {
		t.Errorf("the host was told %s changed after it unsubscribed", u)
	}
}

// A read of a workspace file is the workspace--read call it stands for:
// a policy that denies workspace--read refuses it too, naming the rule.
func TestAFileReadIsCheckedAsTheWorkspaceReadItStandsFor(t *testing.T) {
	ws := openWorkspace(t)
	if err := os.WriteFile(filepath.Join(ws.Dir(), "a.txt"), []byte("alpha"), 0o644); err != nil {
		t.Fatal(err)
	}
	gate := &approval.Gate{Policy: &permission.Policy{User: []permission.Rule{mustRule(t, "workspace--read", permission.Deny)}}}
	cs := connectAt(t, New(Config{Workspace: ws, Gate: gate}), nil, hostVersion)
	res, err := read(cs, fileURI(ws.Dir(), "a.txt"))
	if err == nil || !strings.Contains(err.Error(), "workspace--read (--deny)") {
		t.Errorf("the read under a denial gave %v (%v), want it refused naming the rule", res, err)
	}
	open := &approval.Gate{Policy: &permission.Policy{}} // reads are allowed by default
	if got := readText(t, connectAt(t, New(Config{Workspace: ws, Gate: open}), nil, hostVersion), fileURI(ws.Dir(), "a.txt")); got != "alpha" {
		t.Errorf("the read under the default policy gave %q", got)
	}
}
