package mcpserver

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/myelin-run/myelin/approval"
	"github.com/myelin-run/myelin/permission"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
)

// pathGate decides a workspace--read call by the path it reads, as a
// policy with rules on paths would: a path matching deny (a path.Match
// glob) is denied; one matching ask is asked about — allowed as if the
// person said yes, the question kept in asked, when the check may ask,
// and denied when it may not (q.NoAsk), as approval.Gate denies what no
// one can be asked about. Every other call is allowed.
type pathGate struct {
	deny, ask string
	mu        sync.Mutex
	asked     []string // the paths a person was asked about
}

func (g *pathGate) Check(_ context.Context, q tool.Question) (tool.Ruling, error) {
	var in struct{ Path string }
	_ = json.Unmarshal(q.Call.Input, &in)
	denied := func(why string) (tool.Ruling, error) {
		return tool.Ruling{Record: permission.Record{Decision: permission.Deny.String(), Reason: why}}, nil
	}
	if q.Call.Name == readTool {
		if ok, _ := path.Match(g.deny, in.Path); ok {
			return denied("denied by the rule on " + g.deny)
		}
		if ok, _ := path.Match(g.ask, in.Path); ok {
			if q.NoAsk {
				return denied("asked by the rule on " + g.ask + "; no one is asked")
			}
			g.mu.Lock()
			g.asked = append(g.asked, in.Path)
			g.mu.Unlock()
		}
	}
	return tool.Ruling{Record: permission.Record{Decision: permission.Allow.String()}}, nil
}

func (g *pathGate) questions() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.asked)
}

// writeFiles writes each of names (workspace-relative) with a line of
// text, making their directories.
func writeFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, n := range names {
		p := filepath.Join(dir, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("the text of "+n+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// The resource list shows a result file — its name, its path, its size
// — only when the policy lets it be read without asking: a list asks no
// one, and what it shows of a file the policy denies or asks about is
// what a read of it would have to be allowed for. A file hidden so is
// not added to the SDK's list either, so no list_changed tells of it.
// A policy that denies listing the results' directory lists none. No
// question is put while the list is made.
func TestTheResourceListShowsOnlyTheResultFilesThePolicyLetsBeReadWithoutAsking(t *testing.T) {
	const dir = ".myelin/tool-results/"
	files := []string{dir + "open-1.txt", dir + "secret-1.txt", dir + "asked-1.txt"}
	askAll := &approval.Gate{Policy: &permission.Policy{User: []permission.Rule{mustRule(t, "workspace--read", permission.Ask)}}}
	for _, c := range []struct {
		name string
		gate tool.Gate
		want []string // the files listed
	}{
		{"no gate", nil, files},
		{"a policy that allows every read", &approval.Gate{Policy: &permission.Policy{}}, files},
		{"a gate that denies a path glob and asks about another", &pathGate{deny: dir + "secret-*", ask: dir + "asked-*"}, files[:1]},
		{"a policy that denies workspace--read", &approval.Gate{Policy: &permission.Policy{User: []permission.Rule{mustRule(t, "workspace--read", permission.Deny)}}}, nil},
		{"a policy that asks about workspace--read", askAll, nil},
		{"a policy that denies workspace--list", &approval.Gate{Policy: &permission.Policy{User: []permission.Rule{mustRule(t, "workspace--list", permission.Deny)}}}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws := openWorkspace(t)
			writeFiles(t, ws.Dir(), files...)
			s := New(Config{Workspace: ws, Gate: c.gate})
			if g, ok := c.gate.(*approval.Gate); ok {
				g.Asker = s.Asker() // a question would reach the host's user
			}
			u := &user{answers: []*sdk.ElicitResult{choose(approval.AllowOnce)}}
			cs := connectAt(t, s, u.options(), hostVersion)
			// a file that comes later is listed, or not, the same way
			writeFiles(t, ws.Dir(), dir+"open-2.txt", dir+"secret-2.txt", dir+"asked-2.txt")
			s.syncResources(context.Background())
			var want []string
			for _, f := range c.want {
				want = append(want, fileURI(ws.Dir(), f), fileURI(ws.Dir(), strings.Replace(f, "-1.", "-2.", 1)))
			}
			got := resourceURIs(t, cs)
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("the resources listed are\n%v\nwant\n%v", got, want)
			}
			if q := u.questions(); len(q) != 0 {
				t.Errorf("listing put %d questions to the host's user, want none: %v", len(q), q[0].Message)
			}
			if g, ok := c.gate.(*pathGate); ok && len(g.questions()) != 0 {
				t.Errorf("listing asked about %v, want no question", g.questions())
			}
		})
	}
}

// A subscription to a workspace file tells its subscriber when the file
// changes, appears or goes away: it is refused when the policy would not
// let the file be read without asking — denied, or asked about, since a
// subscription asks no one — with the same words whether the file is
// there or not, and nothing is watched for it. A file the policy allows
// is subscribed to, there or not yet. A read of a denied file likewise
// says the same whether it is there or not.
func TestASubscriptionToAFileThePolicyHidesIsRefusedAlikeWhetherItIsThereOrNot(t *testing.T) {
	ws := openWorkspace(t)
	writeFiles(t, ws.Dir(), "secret.txt", "asked.txt", "open.txt")
	g := &pathGate{deny: "secret*", ask: "asked*"}
	s := New(Config{Workspace: ws, Gate: g})
	cs := connectAt(t, s, nil, hostVersion)
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	subscribe := func(name string) error {
		return cs.Subscribe(ctx, &sdk.SubscribeParams{URI: fileURI(ws.Dir(), name)})
	}
	// the error of name, with its name taken out
	anonymous := func(err error, name string) string {
		if err == nil {
			return ""
		}
		return strings.ReplaceAll(err.Error(), name, "NAME")
	}
	for _, pair := range [][2]string{{"secret.txt", "secret-gone.txt"}, {"asked.txt", "asked-gone.txt"}} {
		there, gone := subscribe(pair[0]), subscribe(pair[1])
		if there == nil || gone == nil {
			t.Errorf("subscribing to %s gave %v and to %s (not there) %v: want both refused", pair[0], there, pair[1], gone)
			continue
		}
		if a, b := anonymous(there, pair[0]), anonymous(gone, pair[1]); a != b {
			t.Errorf("a refused subscription tells whether the file is there:\n there: %s\n gone:  %s", a, b)
		}
		if !strings.Contains(there.Error(), readTool) {
			t.Errorf("the refusal %q does not name the %s it stands for", there, readTool)
		}
	}
	if q := g.questions(); len(q) != 0 {
		t.Errorf("subscribing asked about %v, want no question", q)
	}
	for _, name := range []string{"open.txt", "new.txt"} {
		if err := subscribe(name); err != nil {
			t.Errorf("subscribing to %s, which the policy allows: %v", name, err)
		}
	}
	s.subs.mu.Lock()
	var watchedNow []string
	for u := range s.subs.by {
		watchedNow = append(watchedNow, strings.TrimPrefix(u, fileRootURI(ws.Dir())+"/"))
	}
	s.subs.mu.Unlock()
	slices.Sort(watchedNow)
	if want := []string{"new.txt", "open.txt"}; !slices.Equal(watchedNow, want) {
		t.Errorf("the URIs subscribed to are %v, want %v", watchedNow, want)
	}
	_, there := read(cs, fileURI(ws.Dir(), "secret.txt"))
	_, gone := read(cs, fileURI(ws.Dir(), "secret-gone.txt"))
	if there == nil || anonymous(there, "secret.txt") != anonymous(gone, "secret-gone.txt") {
		t.Errorf("a denied read tells whether the file is there:\n there: %v\n gone:  %v", there, gone)
	}
}

// sessionGate allows every call, keeping for each the approval session
// (approval.SessionOf) it was checked under, by tool, but for the
// resource list's checks.
type sessionGate struct {
	mu   sync.Mutex
	seen []string // "tool session"
}

func (g *sessionGate) Check(ctx context.Context, q tool.Question) (tool.Ruling, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	// the resource list's checks (its workspace--list, and a
	// workspace--read of each result file when a call spilled) are under
	// no host's session, and come when the list is synced
	if approval.SessionOf(ctx) != listSession {
		g.seen = append(g.seen, q.Call.Name+" "+approval.SessionOf(ctx))
	}
	return tool.Ruling{Record: permission.Record{Decision: permission.Allow.String()}}, nil
}

// A host's resource read is checked under that host's approval session,
// the one its calls are checked under, so that what its user allowed for
// the session holds for its reads and for no other host's: before, every
// host's reads were checked under the gate's one session (""), where one
// host's answer would have widened all the others' reads.
func TestAHostsReadIsCheckedUnderItsOwnApprovalSession(t *testing.T) {
	ws := openWorkspace(t)
	writeFiles(t, ws.Dir(), "a.txt")
	g := &sessionGate{}
	// test--x's answer spills, so that the resource list (a result file
	// in it) is checked too, under no host's session
	big := strings.Repeat("x\n", result.DefaultCap)
	s := New(Config{Workspace: ws, Gate: g, Env: result.Env{Store: ws}, Tools: registry(t, rawTool("test--x", result.Result{Data: big}))})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	a, b := connectHTTP(t, srv, false), connectHTTP(t, srv, false)
	call(t, a, "test--x", nil)
	for _, cs := range []*sdk.ClientSession{a, b} {
		if _, err := read(cs, fileURI(ws.Dir(), "a.txt")); err != nil {
			t.Fatal(err)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	want := []string{"test--x mcp:" + a.ID(), readTool + " mcp:" + a.ID(), readTool + " mcp:" + b.ID()}
	if !slices.Equal(g.seen, want) {
		t.Errorf("the checks were under the sessions\n%q\nwant\n%q", g.seen, want)
	}
}

// A subscribed directory's size and time change as files come and go in
// it, which is what a workspace--list of it shows: under a policy that
// denies workspace--list, a file made in it changes nothing a
// subscriber is told; under one that allows it, it does.
func TestASubscribedDirectoryTellsOfItsEntriesOnlyWhereTheyMayBeListed(t *testing.T) {
	for _, c := range []struct {
		name    string
		rules   []permission.Rule
		changes bool
	}{
		{"a policy that allows workspace--list", nil, true},
		{"a policy that denies workspace--list", []permission.Rule{mustRule(t, "workspace--list", permission.Deny)}, false},
		{"a policy that asks about workspace--list", []permission.Rule{mustRule(t, "workspace--list", permission.Ask)}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws := openWorkspace(t)
			writeFiles(t, ws.Dir(), "dir/a.txt")
			// an hour back, so that the file made below changes its time
			// however coarse the file system's clock
			old := time.Now().Add(-time.Hour)
			if err := os.Chtimes(filepath.Join(ws.Dir(), "dir"), old, old); err != nil {
				t.Fatal(err)
			}
			s := New(Config{Workspace: ws, Gate: &approval.Gate{Policy: &permission.Policy{User: c.rules}}})
			uri := fileURI(ws.Dir(), "dir")
			before := s.stamp(context.Background(), uri)
			writeFiles(t, ws.Dir(), "dir/secret-name-of-some-length.txt")
			if after := s.stamp(context.Background(), uri); (after != before) != c.changes {
				t.Errorf("the directory's stamp went from %q to %q when a file was made in it; want a change: %v", before, after, c.changes)
			}
		})
	}
}

// Under the production Gate (approval.Gate, its Asker the server's), a
// policy that asks about workspace--read has a subscription refused
// without a question put to anyone, saying the policy asks about it and
// by which rule: the Gate's own words for a question no one was asked
// (about a conversation being recovered) are not a host's to read.
func TestASubscriptionThePolicyAsksAboutIsRefusedUnderTheApprovalGate(t *testing.T) {
	ws := openWorkspace(t)
	writeFiles(t, ws.Dir(), "notes.txt")
	gate := &approval.Gate{Policy: &permission.Policy{User: []permission.Rule{mustRule(t, "workspace--read", permission.Ask)}}}
	s := New(Config{Workspace: ws, Gate: gate})
	asker := &countingAsker{}
	gate.Asker = asker
	cs := connectAt(t, s, nil, hostVersion)
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: fileURI(ws.Dir(), "notes.txt")})
	if err == nil {
		t.Fatal("a subscription to a file the policy asks about was taken")
	}
	for _, want := range []string{"asks about", "rule ask workspace--read", "a subscription asks no one"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "recovered") {
		t.Errorf("the refusal %q speaks of a conversation recovered", err)
	}
	if n := asker.asked.Load(); n != 0 {
		t.Errorf("the subscription asked %d questions, want none", n)
	}
}

// countingAsker counts the questions put to it, and answers none.
type countingAsker struct{ asked atomic.Int64 }

func (a *countingAsker) Ask(context.Context, approval.Request) (approval.Answer, error) {
	a.asked.Add(1)
	return approval.Answer{}, approval.ErrNoOne
}

// A symbolic link in the workspace to a file the policy hides is
// checked as that file too: the read and a subscription's stamp follow
// the link, so a check of the link's own name alone would read and
// watch the hidden file under another name. A link that leads nowhere
// yet is checked as where it leads (its target appearing would be
// told); a subscribed path that comes to be such a link afterwards is
// stamped as hidden, its target's changes not told.
func TestALinkToAFileThePolicyHidesIsCheckedAsThatFile(t *testing.T) {
	ws := openWorkspace(t)
	writeFiles(t, ws.Dir(), "secret.txt", "open.txt")
	for link, to := range map[string]string{"alias": "secret.txt", "dangling": "secret-not-yet.txt", "fine": "open.txt"} {
		if err := os.Symlink(to, filepath.Join(ws.Dir(), link)); err != nil {
			t.Skipf("no symbolic links here: %v", err)
		}
	}
	if err := os.Symlink(".", filepath.Join(ws.Dir(), "here")); err != nil {
		t.Fatal(err)
	}
	g := &pathGate{deny: "secret*"}
	s := New(Config{Workspace: ws, Gate: g})
	cs := connectAt(t, s, nil, hostVersion)
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	for _, name := range []string{"alias", "dangling", "here/secret.txt"} {
		if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: fileURI(ws.Dir(), name)}); err == nil {
			t.Errorf("a subscription to %s, a link to a denied file, was taken", name)
		} else if strings.Contains(strings.ReplaceAll(err.Error(), name, "NAME"), "secret") {
			t.Errorf("the refusal of %s names where it leads: %v", name, err)
		}
	}
	if res, err := read(cs, fileURI(ws.Dir(), "alias")); err == nil {
		t.Errorf("a read of a link to the denied file gave %q", res.Contents[0].Text)
	}
	if res, err := read(cs, fileURI(ws.Dir(), "fine")); err != nil || !strings.Contains(res.Contents[0].Text, "the text of open.txt") {
		t.Errorf("a read of a link to an allowed file gave %v, %v", res, err)
	}
	if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: fileURI(ws.Dir(), "fine")}); err != nil {
		t.Errorf("a subscription to a link to an allowed file: %v", err)
	}
	// a path subscribed to before it was a link to the denied file
	uri := fileURI(ws.Dir(), "later")
	if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("secret.txt", filepath.Join(ws.Dir(), "later")); err != nil {
		t.Fatal(err)
	}
	before := s.stamp(ctx, uri)
	if err := os.WriteFile(filepath.Join(ws.Dir(), "secret.txt"), []byte("a longer text of the secret file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if after := s.stamp(ctx, uri); after != before {
		t.Errorf("the stamp of a link to the denied file went from %q to %q when the file changed", before, after)
	}
}
