package server

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/myelin-run/myelin/approval"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/internal/skipped"
	"github.com/myelin-run/myelin/permission"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/tool"
)

// browser starts a headless chromium for the test, or skips it when there
// is none — except under CI=true, where .ci/run installs one, and a
// missing browser fails the test.
func browser(t *testing.T) context.Context {
	t.Helper()
	var path string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("no chromium on PATH; .ci/run installs Debian's chromium")
		}
		skipped.Need(t, "chromium", "apt-get install chromium")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	ctx, cancelTime := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelTime(); cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("chromium (%s) does not start: %v", path, err)
		}
		t.Skipf("chromium (%s) does not start: %v", path, err)
	}
	return ctx
}

// waitFor polls a JavaScript expression until it is truthy.
func waitFor(t *testing.T, ctx context.Context, what, js string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool]("!!("+js+")", chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("waiting for %s (%s): %v", what, js, err)
	}
}

// click clicks the element sel names once it is there, finding and
// clicking it in one evaluation in the page: chromedp.Click looks the
// node up, then clicks it by its id in a second step, and a page that
// renders its timeline or title again in between (its data came in)
// leaves that id gone ("Could not find node with given id").
func click(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	waitFor(t, ctx, "a click on "+sel, `(() => { const el = document.querySelector(`+quote(sel)+`); if (!el) return false; el.click(); return true })()`)
}

// fillAndClick sets the value of the field sel names, then clicks the
// element button names, both in one evaluation in the page (see click).
func fillAndClick(t *testing.T, ctx context.Context, field, value, button string) {
	t.Helper()
	waitFor(t, ctx, "a click on "+button, `(() => { const f = document.querySelector(`+quote(field)+`), b = document.querySelector(`+quote(button)+`); if (!f || !b) return false; f.value = `+quote(value)+`; b.click(); return true })()`)
}

func text(t *testing.T, ctx context.Context, js string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return s
}

// screenshot saves the page under the test's artifacts (and, when
// MYELIN_SCREENSHOTS names a directory, there too: how docs/serve.md's
// picture is made).
func screenshot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	for _, d := range []string{dir, os.Getenv("MYELIN_SCREENSHOTS")} {
		if d == "" {
			continue
		}
		if err := os.WriteFile(filepath.Join(d, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestTheInspectorShowsACallsThreePanesPagesASpillAndStreamsATurn(t *testing.T) {
	ctx := browser(t)
	hold := make(chan struct{})
	f := newFixture(t,
		providertest.Step{Text: "Looking.", ToolCalls: []providertest.ToolCall{
			{ID: "c_big", Name: "big--run", Input: `{}`},
			{ID: "c_fail", Name: "fail--run", Input: `{}`},
			{ID: "c_shot", Name: "shot--run", Input: `{}`},
		}},
		providertest.Step{Text: "All three seen."},
		providertest.Step{Text: "streamed from the page", Hold: hold},
	)
	id := f.newConversation()
	w := f.watch(id)
	f.startTurn(id, "look at everything")
	w.until(t, EventTurnFinished)
	artifacts := t.TempDir()
	t.Logf("screenshots in %s", artifacts)

	if err := chromedp.Do(ctx, chromedp.Navigate(f.http.URL+"/?conversation="+id)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the three calls with their events", `document.querySelectorAll("#timeline .call .pane").length === 9 && document.querySelector('[data-call="c_big"] .pane.produced').textContent.includes("characters")`)

	// the spilled call: the model saw the head and the notice; the stored
	// text is the same bytes; the produced pane has the whole size
	big := `document.querySelector('[data-call="c_big"]')`
	// the model saw pane shows the block as the next request carried it
	waitFor(t, ctx, "the sent block", big+`.querySelector(".sent-same") !== null`)
	if stray := text(t, ctx, `Array.from(`+big+`.querySelector(".pane.saw").childNodes).filter((n) => n.nodeType !== 1).map((n) => n.textContent).join("|")`); stray != "" {
		t.Fatalf("the Model saw pane has stray text outside its elements: %q", stray)
	}
	saw := text(t, ctx, big+`.querySelector(".pane.saw pre.sent-text").textContent`)
	stored := text(t, ctx, big+`.querySelector(".pane.stored pre").textContent`)
	produced := text(t, ctx, big+`.querySelector(".pane.produced").textContent`)
	msgs, _ := f.store.Messages(context.Background(), id)
	var want string
	for _, p := range msgs[2].Parts {
		if p.CallID == "c_big" {
			want = p.Text
		}
	}
	if saw != want || stored != want || !strings.Contains(saw, ".myelin/tool-results/") {
		t.Fatalf("the big call's panes:\nsaw %q\nstored %q\nwant %q", saw, stored, want)
	}
	if !strings.Contains(produced, fmt.Sprintf("%d characters", len(bigText))) {
		t.Fatalf("produced pane: %q", produced)
	}
	block := text(t, ctx, big+`.querySelector(".pane.saw pre.sent-block").textContent`)
	if !strings.Contains(block, `"tool_use_id": "c_big"`) || !strings.Contains(block, `"type": "tool_result"`) {
		t.Fatalf("the sent block: %s", block[:min(len(block), 300)])
	}
	// the error and the image
	if head := text(t, ctx, `document.querySelector('[data-call="c_fail"] .call-head').textContent`); !strings.Contains(head, "error") {
		t.Fatalf("the failed call's head: %q", head)
	}
	if s := text(t, ctx, `document.querySelector('[data-call="c_fail"] .pane.stored pre').textContent`); !strings.Contains(s, "it failed: on purpose") {
		t.Fatalf("the failed call's stored text: %q", s)
	}
	if s := text(t, ctx, `document.querySelector('[data-call="c_shot"] .pane.stored').textContent`); !strings.Contains(s, "1 image(s)") {
		t.Fatalf("the image call's stored pane: %q", s)
	}
	screenshot(t, ctx, artifacts, "inspector-conversation.png")

	// the spill file in the pager, with the model's next ready call; then
	// the next page
	click(t, ctx, `[data-call="c_big"] button.spill`)
	waitFor(t, ctx, "the pager", `!document.getElementById("pager").hidden && document.getElementById("pager-text").textContent.length > 0`)
	page := text(t, ctx, `document.getElementById("pager-text").textContent`)
	call := text(t, ctx, `document.getElementById("pager-call").textContent`)
	if !strings.Contains(page, "a line of the big output") || !strings.HasPrefix(call, `workspace--read {"path":".myelin/tool-results/`) {
		t.Fatalf("pager: call %q, page starts %q", call, page[:min(len(page), 200)])
	}
	info := text(t, ctx, `document.getElementById("pager-info").textContent`)
	screenshot(t, ctx, artifacts, "inspector-pager.png")
	if err := chromedp.Do(ctx, chromedp.Click(`#pager-next`)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the next page", `document.getElementById("pager-info").textContent !== `+quote(info))

	// a turn started from the page streams into it
	if err := chromedp.Do(ctx, chromedp.SetValue(`#prompt`, "stream for me"), chromedp.Click(`#start-turn`)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the live turn", `!document.getElementById("live").hidden && document.getElementById("live-state").textContent === "running"`)
	close(hold)
	waitFor(t, ctx, "the streamed text", `document.getElementById("live-text").textContent === "streamed from the page"`)
	waitFor(t, ctx, "the turn's end", `document.getElementById("live-state").textContent.startsWith("finished: end_turn")`)
	waitFor(t, ctx, "the new turn in the timeline", `document.querySelectorAll("#timeline .turn").length === 2`)
	screenshot(t, ctx, artifacts, "inspector-live.png")

	// the page itself is served without the token; the data is not
	f.srv.Token = goodToken
	resp, err := http.Get(f.http.URL + "/inspector/app.js")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("app.js with a token set: %v %v", resp, err)
	}
	resp.Body.Close()
}

// A call that delegated links to its subagent's conversation (found by
// GET …/children), and the subagent's title links back to the parent, at
// that call.
func TestTheInspectorLinksADelegateCallToItsSubagentAndBack(t *testing.T) {
	ctx := browser(t)
	f, id := delegated(t)
	kids, err := history.Children(context.Background(), f.store, id)
	if err != nil || len(kids) != 1 {
		t.Fatalf("children of %s: %v %v", id, kids, err)
	}
	kid := kids[0].ID

	if err := chromedp.Do(ctx, chromedp.Navigate(f.http.URL+"/?conversation="+id)); err != nil {
		t.Fatal(err)
	}
	link := `document.querySelector('[data-call="c_del"] .call-head button.subagent')`
	waitFor(t, ctx, "the link to the subagent", link+` !== null`)
	if got := text(t, ctx, link+`.dataset.child`); got != kid {
		t.Fatalf("the call links to %q, its child is %q", got, kid)
	}
	click(t, ctx, `[data-call="c_del"] .call-head button.subagent`)
	waitFor(t, ctx, "the subagent's conversation", `document.getElementById("conversation-title").textContent.startsWith("Conversation `+kid+`") && document.getElementById("timeline").textContent.includes("the child's report: 3 files")`)
	back := `document.querySelector("#conversation-title button.parent")`
	waitFor(t, ctx, "the link back", back+` !== null`)
	if got, want := text(t, ctx, back+`.textContent`), "a subagent of "+id+" (call c_del)"; got != want {
		t.Fatalf("the link back reads %q, want %q", got, want)
	}
	click(t, ctx, `#conversation-title button.parent`)
	// the call is marked still once the event stream's replay drew the
	// timeline again with its tool.finished event (that drawing once wiped
	// the mark a moment after it was set: a flake under load)
	waitFor(t, ctx, "the parent drawn with the call's event", `document.getElementById("conversation-title").textContent.startsWith("Conversation `+id+`") && (document.querySelector('[data-call="c_del"] .pane.produced') || {textContent: ""}).textContent.includes("characters")`)
	if got := text(t, ctx, `String(document.querySelector('[data-call="c_del"].focus') !== null)`); got != "true" {
		t.Fatalf("the parent's call c_del is not marked once its timeline was drawn with its events")
	}
}

// The "Model saw" pane shows a spilled result as the model reads it: its
// head and its notice as text, lines and all (no JSON escapes), with the
// block as sent one click away; the live turn keeps each round's text
// apart; and with the side panel open, the three panes keep a readable
// width (stacked, not squeezed to a word or two a line).
func TestTheInspectorShowsWhatTheModelReadAsTextWithTheRawBlockOnAToggle(t *testing.T) {
	ctx := browser(t)
	f := newFixture(t,
		providertest.Step{Text: "Let me count.", ToolCalls: []providertest.ToolCall{{ID: "c_big", Name: "big--run", Input: `{}`}}},
		providertest.Step{Text: "And read notes."},
	)
	id := f.newConversation()
	w := f.watch(id)
	f.startTurn(id, "count")
	w.until(t, EventTurnFinished)
	msgs, _ := f.store.Messages(context.Background(), id)
	var want string
	for _, p := range msgs[2].Parts {
		if p.CallID == "c_big" {
			want = p.Text
		}
	}
	if !strings.Contains(want, "\nRead on: workspace--read {\"path\":\".myelin/tool-results/") {
		t.Fatalf("the stored result has no notice to read on: %q", want[max(0, len(want)-400):])
	}

	if err := chromedp.Do(ctx, chromedp.Navigate(f.http.URL+"/?conversation="+id)); err != nil {
		t.Fatal(err)
	}
	big := `document.querySelector('[data-call="c_big"]')`
	// drawn with its tool.finished event (the timeline is then drawn
	// again only when something is added), and the request's text in
	waitFor(t, ctx, "the call with its event", big+` && `+big+`.querySelector(".pane.produced").textContent.includes("characters")`)
	waitFor(t, ctx, "the text the request carried", big+`.querySelector(".pane.saw .sent-same") !== null`)

	// the text as the model reads it: the very stored text, its notice on
	// lines of their own
	saw := text(t, ctx, big+`.querySelector(".pane.saw pre.sent-text").textContent`)
	if saw != want {
		t.Fatalf("the Model saw pane shows\n%q\nnot the text the model read\n%q", saw[max(0, len(saw)-400):], want[max(0, len(want)-400):])
	}
	lines := text(t, ctx, big+`.querySelector(".pane.saw pre.sent-text").innerText`)
	var readOn string
	for _, l := range strings.Split(lines, "\n") {
		if strings.HasPrefix(l, "Read on: workspace--read ") {
			readOn = l
		}
	}
	if readOn == "" || strings.Contains(readOn, `\"`) || strings.Contains(lines, `\n`) {
		t.Fatalf("the notice is not readable as text: the line %q in\n%s", readOn, lines[max(0, len(lines)-400):])
	}
	// the block as sent, on a toggle: hidden, then shown
	raw := big + `.querySelector(".pane.saw pre.sent-block")`
	if shown := text(t, ctx, `String(`+raw+`.getClientRects().length > 0)`); shown != "false" {
		t.Fatalf("the raw block is shown before the toggle")
	}
	click(t, ctx, `[data-call="c_big"] .pane.saw .raw-toggle`)
	waitFor(t, ctx, "the raw block", raw+`.getClientRects().length > 0`)
	block := text(t, ctx, raw+`.textContent`)
	if !strings.Contains(block, `"tool_use_id": "c_big"`) || !strings.Contains(block, `Read on: workspace--read {\"path\":`) {
		t.Fatalf("the raw block is not the block as sent: %s", block[max(0, len(block)-400):])
	}

	// the live turn's text: one round's, then the next's, apart
	live := text(t, ctx, `document.getElementById("live-text").textContent`)
	if !strings.Contains(live, "Let me count.") || !strings.Contains(live, "And read notes.") || strings.Contains(live, "Let me count.And") {
		t.Fatalf("the turn's text glues its rounds: %q", live)
	}
	if !strings.Contains(text(t, ctx, `document.getElementById("live-text").innerText`), "Let me count.\n") {
		t.Fatalf("the rounds' texts are not on lines of their own: %q", live)
	}

	// the side panel open: each pane keeps a readable width
	click(t, ctx, `[data-call="c_big"] button.spill`)
	waitFor(t, ctx, "the pager", `!document.getElementById("pager").hidden && document.getElementById("pager-text").textContent.length > 0`)
	widths := text(t, ctx, `Array.from(`+big+`.querySelectorAll(".pane")).map((p) => Math.round(p.getBoundingClientRect().width)).join(",")`)
	for _, v := range strings.Split(widths, ",") {
		if px, err := strconv.Atoi(v); err != nil || px < 240 {
			t.Fatalf("with the side panel open the panes are %s px wide; each should be at least 240", widths)
		}
	}
	screenshot(t, ctx, t.TempDir(), "inspector-model-saw.png")

	// each round names the request that produced its answer, numbered as
	// the messages are; the request opens with its wire named
	rounds := text(t, ctx, `Array.from(document.querySelectorAll("#timeline .round .request")).map((e) => e.textContent).join("\n")`)
	rl := strings.Split(rounds, "\n")
	if len(rl) != 2 || !strings.HasPrefix(rl[0], "request 1 (") || !strings.Contains(rl[0], "→ message 2:") || !strings.HasPrefix(rl[1], "request 2 (") || !strings.Contains(rl[1], "→ message 4:") {
		t.Fatalf("the rounds' requests read\n%s\nwant request 1 → message 2, request 2 → message 4", rounds)
	}
	text(t, ctx, `document.querySelectorAll("#timeline .round .request button.request-open")[1].click() || ""`)
	waitFor(t, ctx, "request 2 in the side panel", `document.getElementById("pager-path").textContent.startsWith("request 2 (anthropic, ")`)

	// one answer with a text before each of its calls: its texts apart too
	two := f.newConversation()
	call := func(id string) history.Part {
		return history.Part{Type: history.ToolCallPart, CallID: id, Name: "noop--run", Input: []byte(`{}`)}
	}
	if err := f.store.Append(context.Background(), two,
		history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "count, then read"}}},
		history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: "Let me count."}, call("c1"), {Type: history.TextPart, Text: "And read notes."}, call("c2")}},
		history.Message{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: "c1", Text: "ok"}, {Type: history.ToolResultPart, CallID: "c2", Text: "ok"}}},
	); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(f.http.URL+"/?conversation="+two)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the answer", `document.querySelector("#timeline .round pre.answer") !== null`)
	if got := text(t, ctx, `document.querySelector("#timeline .round pre.answer").textContent`); got != "Let me count.\n\nAnd read notes." {
		t.Fatalf("the answer's two texts read %q, want them apart", got)
	}
}

// A call waiting for approval (the permission gate asking through the
// server) shows on the page with the command, the part asked about and
// the rule allow_session adds; Deny with a reason is answered as such,
// and Allow for this conversation lets the turn go on: the page answers
// over the API, as a client does. Each call's line then says what was
// decided of it, and by whom. What the model wrote is shown with the
// characters that would reorder or hide it (bidi controls, escapes)
// written as escapes, and a backslash it wrote before what reads as such
// an escape doubled.
func TestTheInspectorAnswersAnApprovalAndTheTurnProceeds(t *testing.T) {
	ctx := browser(t)
	f := newFixture(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "c_deny", Name: "shell--run", Input: `{"command":"rm -rf /tmp/x\u202e\u001b[2K \\u202e C:\\Users"}`}}},
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "c_ask", Name: "shell--run", Input: `{"command":"ls && rm -rf /tmp/y"}`}}},
		providertest.Step{Text: "cleaned up"},
	)
	ran := ""
	if err := f.srv.Agent.Tools.Add(tool.MustFunc("shell--run", "Runs a command (a stand-in).", func(_ context.Context, in struct {
		Command string `json:"command"`
	}) (any, error) {
		ran += in.Command + "\n"
		return "ran " + in.Command, nil
	})); err != nil {
		t.Fatal(err)
	}
	f.srv.Agent.Gate = &approval.Gate{Policy: &permission.Policy{User: []permission.Rule{mustRule(t, "ls", permission.Allow)}}, Asker: f.srv}
	id := f.newConversation()
	if err := chromedp.Do(ctx, chromedp.Navigate(f.http.URL+"/?conversation="+id)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the page watching the conversation", `document.getElementById("status").textContent === "watching `+id+`"`)
	if err := chromedp.Do(ctx, chromedp.SetValue(`#prompt`, "clean up"), chromedp.Click(`#start-turn`)); err != nil {
		t.Fatal(err)
	}

	// the first call, denied with a reason
	box := `document.querySelector('.approval[data-call="c_deny"]')`
	waitFor(t, ctx, "the first approval", box+` !== null`)
	if got := text(t, ctx, box+`.querySelector(".approval-command").textContent`); got != `rm -rf /tmp/x\u202e\u001b[2K \\u202e C:\Users` {
		t.Fatalf("the approval shows the command %q", got)
	}
	fillAndClick(t, ctx, `.approval[data-call="c_deny"] .deny-reason`, "not now", `.approval[data-call="c_deny"] button.deny`)

	// the second: a compound command, asked about its one part no rule
	// allows; allowed for the conversation, and the turn goes on
	box = `document.querySelector('.approval[data-call="c_ask"]')`
	waitFor(t, ctx, "the second approval", box+` !== null`)
	if got := text(t, ctx, box+`.querySelector(".approval-command").textContent`); got != "ls && rm -rf /tmp/y" {
		t.Fatalf("the approval shows the command %q", got)
	}
	if got := text(t, ctx, box+`.querySelector(".approval-part").textContent`); got != "rm -rf /tmp/y" {
		t.Fatalf("the approval shows the part asked about as %q", got)
	}
	if got := text(t, ctx, box+`.querySelector("button.allow-session").textContent`); got != "Allow for this conversation (rm -rf /tmp/y)" {
		t.Fatalf("the allow_session button reads %q", got)
	}
	screenshot(t, ctx, t.TempDir(), "inspector-approval.png")
	click(t, ctx, `.approval[data-call="c_ask"] button.allow-session`)
	waitFor(t, ctx, "the turn's end", `document.getElementById("live-state").textContent.startsWith("finished: end_turn")`)
	if ran != "ls && rm -rf /tmp/y\n" {
		t.Fatalf("the commands run: %q, want the allowed one alone", ran)
	}
	if n := text(t, ctx, `String(document.querySelectorAll(".approval").length)`); n != "0" {
		t.Fatalf("%s approvals still shown after both were answered", n)
	}
	// each call's line says what was decided of it
	perm := func(call string) string {
		return `document.querySelector('[data-call="` + call + `"] .call-head .permission')`
	}
	waitFor(t, ctx, "both decisions in the timeline", perm("c_deny")+` !== null && `+perm("c_ask")+` !== null`)
	if got := text(t, ctx, perm("c_deny")+`.textContent`); !strings.HasPrefix(got, "denied by a person (deny) — not now at ") {
		t.Fatalf("the denied call's line says %q", got)
	}
	if got := text(t, ctx, perm("c_ask")+`.textContent`); !strings.HasPrefix(got, "allowed by a person (allow session): allow rm -rf /tmp/y") {
		t.Fatalf("the allowed call's line says %q", got)
	}
	screenshot(t, ctx, t.TempDir(), "inspector-decisions.png")
}

// mustRule is rule text parsed as a flag's rule of decision d.
func mustRule(t *testing.T, text string, d permission.Decision) permission.Rule {
	t.Helper()
	r, err := permission.ParseRule(text, d, "flag")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A conversation's page shows its branches (each linked, with the point
// where it parts and a switch to it) and where a fork or a branch comes
// from (a link to its base, scrolled to the point); a switch and an undo
// from the page redraw it from their events.
func TestTheInspectorShowsAndNavigatesTheBranchTree(t *testing.T) {
	ctx := browser(t)
	f, id, _ := twoTurns(t)
	status, body := f.do("POST", "/v1/conversations/"+id+"/rewind", `{"at":2}`)
	var rw Rewound
	mustJSON(t, body, &rw)
	if status != http.StatusOK {
		t.Fatalf("rewind: %d %s", status, body)
	}
	branch := rw.Branch.ID
	status, body = f.do("POST", "/v1/conversations/"+id+"/fork", `{"at":2}`)
	var fork ConversationInfo
	mustJSON(t, body, &fork)
	if status != http.StatusCreated {
		t.Fatalf("fork: %d %s", status, body)
	}
	title := `document.getElementById("conversation-title").textContent`
	turns := `document.querySelectorAll("#timeline .turn").length`

	if err := chromedp.Do(ctx, chromedp.Navigate(f.http.URL+"/?conversation="+id)); err != nil {
		t.Fatal(err)
	}
	entry := `document.querySelector('#branches .branch[data-branch="` + branch + `"]')`
	waitFor(t, ctx, "the branch, with its point", entry+` !== null && `+entry+`.textContent.includes("parts at message 2, 4 messages") && `+turns+` === 1`)
	if got := text(t, ctx, `document.querySelector('#conversations li[data-id="`+fork.ID+`"]').textContent`); !strings.HasPrefix(got, "↱ "+fork.ID) {
		t.Errorf("the fork in the list reads %q; want it marked ↱", got)
	}

	// switch to the branch from the page: the turn it kept comes back
	// clicked where it is found, in one step: the list is drawn again as
	// the page's reads come back, and a node found first may be gone when
	// clicked (CI: "Could not find node with given id")
	text(t, ctx, `document.querySelector('#branches .branch[data-branch="`+branch+`"] button.branch-switch').click() || ""`)
	waitFor(t, ctx, "the switched conversation", turns+` === 2 && document.getElementById("timeline").textContent.includes("B") && document.getElementById("tree-note").textContent.includes("switched to branch `+branch+`")`)
	waitFor(t, ctx, "the branch now holding what the conversation held", entry+` !== null && `+entry+`.textContent.includes("2 messages")`)

	// the branch's page, and back to its conversation at the point
	// clicked where it is found, in one step: the list is drawn again as
	// the page's reads come back, and a node found first may be gone when
	// clicked (CI: "Could not find node with given id")
	text(t, ctx, `document.querySelector('#branches .branch[data-branch="`+branch+`"] button.branch-open').click() || ""`)
	waitFor(t, ctx, "the branch's page", title+`.startsWith("Conversation `+branch+`") && document.querySelector("#conversation-title button.branch-of") !== null`)
	if got, want := text(t, ctx, `document.querySelector("#conversation-title button.branch-of").textContent`), "a branch of "+id+" (kept by a rewind)"; got != want {
		t.Fatalf("the branch's link to its conversation reads %q, want %q", got, want)
	}
	click(t, ctx, `#conversation-title button.branch-of`)
	waitFor(t, ctx, "the conversation, at the point", title+`.startsWith("Conversation `+id+`") && document.querySelector('#timeline [data-n="2"].focus') !== null`)

	// a fork's page links to its base at its point
	if err := chromedp.Do(ctx, chromedp.Navigate(f.http.URL+"/?conversation="+fork.ID)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the fork's link to its base", `document.querySelector("#conversation-title button.fork-of") !== null`)
	if got, want := text(t, ctx, `document.querySelector("#conversation-title button.fork-of").textContent`), "forked from "+id+" at message 2"; got != want {
		t.Fatalf("the fork's link reads %q, want %q", got, want)
	}
	click(t, ctx, `#conversation-title button.fork-of`)
	waitFor(t, ctx, "the base, at the point", title+`.startsWith("Conversation `+id+`") && document.querySelector('#timeline [data-n="2"].focus') !== null && `+turns+` === 2`)
	// and stays marked when the timeline is drawn again (as the event
	// stream's replay or a live turn draws it)
	text(t, ctx, `(state.drawn = "", loadMessages(), "")`)
	waitFor(t, ctx, "the base drawn again, at the point", `state.drawn !== "" && document.querySelector('#timeline [data-n="2"].focus') !== null`)

	// undo from the page
	if err := chromedp.Do(ctx, chromedp.Click(`#undo-turn`)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the undone turn", turns+` === 1 && document.getElementById("tree-note").textContent.startsWith("last turn undone")`)
	screenshot(t, ctx, t.TempDir(), "inspector-branches.png")
	if got := f.texts(t, id); got != "a|A" {
		t.Fatalf("the conversation after the page's undo reads %q", got)
	}
}

// Issue 31: the inspector shows what each request, each turn and the
// conversation cost, as the server prices them; a request whose model has
// no price is "cost unknown" and the sums over it "at least" the known
// part — never $0.
func TestTheInspectorShowsCostsPerRequestTurnAndConversation(t *testing.T) {
	ctx := browser(t)
	f := newFixture(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "c1", Name: "noop--run", Input: `{}`}}, Input: 40000, Output: 10},
		providertest.Step{Text: "done", Input: 40100, Output: 20},
		providertest.Step{Text: "unpriced", Input: 100, Output: 5})
	f.srv.Agent.Pricer, f.srv.Agent.ContextWindow = onePricer{}, 1<<20
	id := f.newConversation()
	nextTurn(t, f, id, `{"prompt":"go"}`)
	nextTurn(t, f, id, `{"prompt":"more","model":"unpriced"}`)

	if err := chromedp.Do(ctx, chromedp.Navigate(f.http.URL+"/?conversation="+id)); err != nil {
		t.Fatal(err)
	}
	total := `document.getElementById("conversation-cost")`
	waitFor(t, ctx, "the conversation's cost", total+` !== null`)
	if got, want := text(t, ctx, total+`.textContent`), "Conversation cost at least $0.0801 (model unpriced not in the price table)"; got != want {
		t.Errorf("the conversation's cost reads %q, want %q", got, want)
	}
	for _, c := range []struct{ what, js, want string }{
		{"the first request", `document.querySelector('.round[data-n="2"] .request').textContent`, "output; cost $0.0400"},
		{"the second request", `document.querySelector('.round[data-n="4"] .request').textContent`, "output; cost $0.0401"},
		{"the unpriced request", `document.querySelector('.round[data-n="6"] .request').textContent`, "output; cost unknown (model unpriced not in the price table)"},
		{"the first turn", `document.querySelector('.turn[data-n="1"] .turn-cost').textContent`, "turn cost $0.0801 (2 requests)"},
		{"the unpriced turn", `document.querySelector('.turn[data-n="5"] .turn-cost').textContent`, "turn cost unknown (model unpriced not in the price table) (1 request)"},
	} {
		if got := text(t, ctx, c.js); !strings.HasSuffix(got, c.want) {
			t.Errorf("%s reads %q, want it to end %q", c.what, got, c.want)
		}
	}
	if tl := text(t, ctx, `document.getElementById("timeline").textContent`); strings.Contains(tl, "$0.0000") {
		t.Errorf("the timeline shows a cost of $0.0000: %s", tl)
	}
}

// The approval box shows no two texts alike (as approval.Visible): a
// line break after an escaped backslash is not the characters \\n, a bidi
// override after a backslash not its name; and a call's input is shown
// as JSON of the same value with what would not show as itself escaped.
func TestTheInspectorShowsNoTwoCommandsAlike(t *testing.T) {
	ctx := browser(t)
	f := newFixture(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(f.http.URL+"/")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ fn, a, b string }{
		{"visibleLine", `"echo ok\\\\\nrm -rf ~"`, `"echo ok\\\\nrm -rf ~"`},
		{"visibleLine", `"a\\\n"`, `"a\\n"`},
		{"visible", `"a\\\u202eb"`, `"a\\u202eb"`},
		{"visible", `"a\\\u001b[2K"`, `"a\\u001b[2K"`},
		{"visible", `"a\u2028b"`, `"a\\u2028b"`},
	} {
		a, b := text(t, ctx, c.fn+"("+c.a+")"), text(t, ctx, c.fn+"("+c.b+")")
		if a == b {
			t.Errorf("%s(%s) and %s(%s) both show %s", c.fn, c.a, c.fn, c.b, a)
		}
	}
	// a line that ends in \\ is shown so (tripled, it would read as a
	// line continuation hiding the next command); myelin's own words
	// (the reason) keep their backslashes, as on the terminal
	if got, want := text(t, ctx, `visible("echo ok\\\\\nrm -rf ~")`), "echo ok\\\\\nrm -rf ~"; got != want {
		t.Errorf("the command is shown\n%s\nwant\n%s", got, want)
	}
	reason := `asked by default: no rule allows shell--run "printf 'a\\nb'"`
	if got := text(t, ctx, "printable("+strconv.Quote(reason+"\u202e")+")"); got != reason+`\u202e` {
		t.Errorf("the reason is shown\n%s\nwant (as approval.Printable)\n%s", got, reason+`\u202e`)
	}
	shown := text(t, ctx, `visibleJSON({content: "a\nb\u202e\u2028", path: "C:\\notes"})`)
	if want := "{\n \"content\": \"a\\nb\\u202e\\u2028\",\n \"path\": \"C:\\\\notes\"\n}"; shown != want {
		t.Errorf("the input is shown\n%s\nwant\n%s", shown, want)
	}
}
