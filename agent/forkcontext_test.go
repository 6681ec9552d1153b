package agent

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/postgres"
	"github.com/myelin-run/myelin/history/postgres/pgtest"
	"github.com/myelin-run/myelin/provider/providertest"
)

// Issue 30, point 4, held at the level of the requests sent: a fork made
// after a context record (results cleared, a summary) sends the requests
// its base sent from that point, records applied; a fork made before one
// sends the base's requests from its point without it, and makes its own
// record when its own requests need one. On every store and every wire.
// (history/storetest holds the stored records, and
// TestAForksFirstRequestIsItsBasesRequestByteForByte the requests of a
// conversation with no records.)

// ctxWork is a conversation that grows until the window policy stores a
// context record: turns "go on with PART-k", each either one emit call of
// 4,000 characters (clearing) or a long prompt of text alone (summary).
type ctxWork struct {
	name   string
	tools  bool
	window int // the agent's ContextWindow
	max    int // its MaxTokens
	// marker is in every request that carries the record, never in one
	// that does not.
	marker string
}

var ctxWorks = []ctxWork{
	{name: "cleared", tools: true, window: 12000, max: 1000, marker: "was cleared here to save room"},
	{name: "summarised", window: 40000, max: 16000, marker: ctxSummary},
}

// ctxSummary is the summary the fake model writes when asked for one.
const ctxSummary = "The user gave the parts of a long text, one a turn, and each was acknowledged."

var ctxPart = regexp.MustCompile(`PART-(\d+)`)

func (w ctxWork) prompt(k int) string {
	if w.tools {
		return fmt.Sprintf("go on with PART-%d", k)
	}
	return fmt.Sprintf("go on with PART-%d: %s", k, strings.Repeat(fmt.Sprintf("words of PART-%d here ", k), 450))
}

// respond answers as the model of w would, from the request alone, so that
// a base and its fork get the same answers to the same requests whatever
// order they come in: the summary when one is asked for; else, for the
// newest part the request names, its emit call until its result is in
// the request, then a text.
// On Gemini each answer's thought signature is one of its own, made from
// its text, where the fake server would number them in the order answered.
func (w ctxWork) respond(q providertest.Request) providertest.Step {
	body := string(q.Body)
	var step providertest.Step
	k := -1
	for _, m := range ctxPart.FindAllStringSubmatch(body, -1) {
		n, _ := strconv.Atoi(m[1])
		k = max(k, n)
	}
	switch {
	case strings.Contains(body, "Write that summary now"):
		step = providertest.Step{Text: ctxSummary}
	case w.tools && !strings.Contains(body, fmt.Sprintf("result %d line 0: ", k)):
		step = emitCall(k, 4000)
	default:
		step = providertest.Step{Text: fmt.Sprintf("PART-%d noted", k)}
	}
	step.GeminiSignature = base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("signature of %q, %d calls, at PART-%d", step.Text, len(step.ToolCalls), k)))
	return step
}

// ctxRun is a base conversation run turn by turn until it stored its first
// context record, and one turn more.
type ctxRun struct {
	r      *rig
	w      ctxWork
	start  []int // stored messages when turn k began: the fork point before it
	first  []int // the index of turn k's first request in r.srv.Requests(); one more at the end
	turn   int   // the turn during which the first record was stored
	at     int   // the place of that record among the base's stored messages
	record history.Edit
}

// runToRecord runs w on r's conversation, answered by w.respond, until a
// context record is stored, and one turn more, in which the base must
// store no other (so that a fork's replay of that turn is the base's).
func runToRecord(t *testing.T, r *rig, w ctxWork) *ctxRun {
	t.Helper()
	ctx := context.Background()
	r.agent.ContextWindow, r.agent.MaxTokens = w.window, w.max
	r.srv.Respond = w.respond
	c := &ctxRun{r: r, w: w, turn: -1}
	for k := 0; c.turn < 0 || k <= c.turn+1; k++ {
		if k == 30 {
			t.Fatalf("%s: no context record was stored in 30 turns", w.name)
		}
		conv, err := r.agent.Store.Get(ctx, r.id)
		if err != nil {
			t.Fatal(err)
		}
		c.start = append(c.start, conv.Messages)
		c.first = append(c.first, len(r.srv.Requests()))
		r.turn(w.prompt(k))
		if c.turn >= 0 {
			continue
		}
		msgs, err := r.agent.Store.Messages(ctx, r.id)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range msgs {
			if m.Role == history.Context {
				c.turn, c.at, c.record = k, i, *m.Edit
				break
			}
		}
	}
	c.first = append(c.first, len(r.srv.Requests()))
	if (c.w.tools && len(c.record.Cleared) == 0) || (!c.w.tools && c.record.Summary == nil) {
		t.Fatalf("%s: the first record stored is %+v, not the %s one the test is about", w.name, c.record, w.name)
	}
	if got := len(records(t, r.agent, r.id)); got != 1 {
		t.Fatalf("%s: the base stored %d context records by the turn after its first; the test wants one, so that the turn after it replays as it was", w.name, got)
	}
	return c
}

// requests are the base's requests of turns from to to-1.
func (c *ctxRun) requests(from, to int) [][]byte {
	return c.r.srv.Requests()[c.first[from]:c.first[to]]
}

// fork forks the base at its stored messages before turn k and runs the
// fork through turns k to to-1 with the base's prompts; it returns the
// fork's id and the requests it sent.
func (c *ctxRun) fork(t *testing.T, k, to int) (string, [][]byte) {
	t.Helper()
	ctx := context.Background()
	id, err := c.r.agent.Fork(ctx, c.r.id, c.start[k])
	if err != nil {
		t.Fatal(err)
	}
	before := len(c.r.srv.Requests())
	for ; k < to; k++ {
		if _, err := c.r.agent.Turn(ctx, id, c.w.prompt(k), nil); err != nil {
			t.Fatalf("the fork's turn %d: %v", k, err)
		}
	}
	return id, c.r.srv.Requests()[before:]
}

// ownRecords are the context records among conversation id's stored
// messages, with their places.
func ownRecords(t *testing.T, a *Agent, id string) map[int]history.Edit {
	t.Helper()
	msgs, err := a.Store.Messages(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]history.Edit{}
	for i, m := range msgs {
		if m.Role == history.Context {
			out[i] = *m.Edit
		}
	}
	return out
}

// forkAfterTheRecordSendsItsBasesRequests: a fork at the end of the turn
// that stored the record sends, for the next turn's prompt, the requests the
// base sent, byte for byte, with the record applied, and stores no record
// of its own for them: it carries the base's.
func forkAfterTheRecordSendsItsBasesRequests(t *testing.T, c *ctxRun) {
	k := c.turn + 1
	id, got := c.fork(t, k, k+1)
	want := c.requests(k, k+1)
	if len(got) != len(want) {
		t.Fatalf("the fork after the %s record sent %d requests for turn %d; the base sent %d", c.w.name, len(got), k, len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("the fork after the %s record: its request %d of turn %d differs from its base's at byte %d:\nbase …%s…\nfork …%s…", c.w.name, i, k, providertest.FirstDiff(want[i], got[i]), near(want[i], got[i]), near(got[i], want[i]))
		}
	}
	if !bytes.Contains(got[0], []byte(c.w.marker)) {
		t.Errorf("the fork after the %s record sent a first request without it (no %q)", c.w.name, c.w.marker)
	}
	if bytes.Contains(got[0], []byte(c.w.taken())) {
		t.Errorf("the fork after the %s record still sends what the record took out of the requests", c.w.name)
	}
	recs := ownRecords(t, c.r.agent, id)
	if e, ok := recs[c.at]; len(recs) != 1 || !ok || !sameEdit(e, c.record, false) {
		t.Errorf("the fork after the %s record reads the records %+v; want the base's alone, at %d: %+v", c.w.name, recs, c.at, c.record)
	}
}

// taken is text the record takes out of every request that carries it:
// the first emit result (cleared), or the first prompt (summarised).
func (w ctxWork) taken() string {
	if w.tools {
		return emitText(0, 4000)[:strings.Index(emitText(0, 4000), "\n")] // a line: JSON has the newline as \n
	}
	return w.prompt(0)[:200]
}

// forkBeforeTheRecordMakesItsOwn: a fork at a point before the record
// sends the base's requests from that point, the first without the
// record; when its own request needs one, it stores its own, in its own
// messages, the same decision as the base's (the same results cleared,
// naming files of its own in the workspace the base wrote; the same
// summary, asked for with the base's summary request), and goes on
// sending what the base sent.
func forkBeforeTheRecordMakesItsOwn(t *testing.T, c *ctxRun) {
	// the last turn whose first request the base sent without the
	// record: the record's own turn when the record came later in it
	k := c.turn
	if c.at == c.start[c.turn]+1 { // stored right after the turn's prompt
		k--
	}
	id, got := c.fork(t, k, c.turn+1)
	want := c.requests(k, c.turn+1)
	if len(got) != len(want) {
		t.Fatalf("the fork before the %s record sent %d requests for turns %d to %d; the base sent %d", c.w.name, len(got), k, c.turn, len(want))
	}
	if bytes.Contains(got[0], []byte(c.w.marker)) || !bytes.Contains(got[0], []byte(c.w.taken())) {
		t.Errorf("the fork at %d, before the %s record at %d, sent a first request that carries it", c.start[k], c.w.name, c.at)
	}
	recs := ownRecords(t, c.r.agent, id)
	own, ok := recs[c.at]
	if len(recs) != 1 || !ok || !sameEdit(own, c.record, c.w.tools) {
		t.Fatalf("the fork before the %s record stored the records %+v; want one of its own at %d, as the base's %+v", c.w.name, recs, c.at, c.record)
	}
	var renames []string // the fork's files for the base's
	for i, cl := range own.Cleared {
		if cl.Path == c.record.Cleared[i].Path {
			t.Errorf("the fork's own clearing of %s names the base's file %s: it must keep the result in a file of its own", cl.CallID, cl.Path)
		}
		renames = append(renames, cl.Path, c.record.Cleared[i].Path)
	}
	names := strings.NewReplacer(renames...)
	for i := range want {
		fork := got[i]
		if bytes.Contains(want[i], []byte(c.w.marker)) {
			fork = []byte(names.Replace(string(fork)))
		}
		if !bytes.Equal(fork, want[i]) {
			t.Fatalf("the fork before the %s record: its request %d from turn %d differs from its base's at byte %d (its own files named as the base's):\nbase …%s…\nfork …%s…", c.w.name, i, k, providertest.FirstDiff(want[i], fork), near(want[i], fork), near(fork, want[i]))
		}
	}
	msgs, err := c.r.agent.Store.Messages(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if conv, err := c.r.agent.Store.Get(context.Background(), id); err != nil || conv.BaseAt != c.start[k] || c.at < conv.BaseAt || len(msgs) <= c.at {
		t.Fatalf("the fork %+v (%v) of %d messages: its record at %d is not among its own, after the %d it shares", conv, err, len(msgs), c.at, c.start[k])
	}
}

// near is a's bytes around the first where it differs from b.
func near(a, b []byte) []byte {
	i := providertest.FirstDiff(a, b)
	return a[i:min(len(a), i+240)]
}

// sameEdit reports whether e is the decision want is: the same results
// cleared (by message, call and size) or the same summary, with the same
// reasons and estimates; with ownFiles, e's cleared results may name other
// files, and their placeholders with them.
func sameEdit(e, want history.Edit, ownFiles bool) bool {
	if e.Why != want.Why || e.Before != want.Before || e.After != want.After || len(e.Cleared) != len(want.Cleared) || (e.Summary == nil) != (want.Summary == nil) {
		return false
	}
	if e.Summary != nil && (e.Summary.Through != want.Summary.Through || e.Summary.Text != want.Summary.Text) {
		return false
	}
	for i, c := range e.Cleared {
		w := want.Cleared[i]
		if ownFiles {
			c.Text, c.Path = strings.ReplaceAll(c.Text, c.Path, w.Path), w.Path
		}
		if c != w {
			return false
		}
	}
	return true
}

// forkContextRig is a rig with the emit tool on store ("sqlite",
// "memory", or "postgres" in the schema named pg).
func forkContextRig(t *testing.T, store, wire, pg string) *rig {
	t.Helper()
	r := newWireRig(t, wire, emitTool(t))
	switch store {
	case "memory":
		r.agent.Store = &history.Memory{}
	case "postgres":
		s, err := postgres.Open(context.Background(), pgtest.DSN(t), postgres.Options{Schema: pg})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		r.agent.Store = s
	default:
		return r
	}
	if err := r.agent.OpenConversation(context.Background(), r.id); err != nil {
		t.Fatal(err)
	}
	return r
}

func forkContextOnEveryStore(t *testing.T, check func(*testing.T, *ctxRun)) {
	for _, store := range []string{"sqlite", "memory", "postgres"} {
		t.Run(store, func(t *testing.T) {
			pg := ""
			if store == "postgres" {
				pg, _ = pgtest.Schema(t)
			}
			for _, w := range ctxWorks {
				for _, wire := range wires() {
					t.Run(w.name+"/"+wire, func(t *testing.T) {
						check(t, runToRecord(t, forkContextRig(t, store, wire, pg), w))
					})
				}
			}
		})
	}
}

func TestAForkAfterAClearingOrSummarySendsItsBasesRequestsCarryingIt(t *testing.T) {
	forkContextOnEveryStore(t, forkAfterTheRecordSendsItsBasesRequests)
}

func TestAForkBeforeAClearingOrSummarySendsItsBasesRequestsWithoutItAndMakesItsOwn(t *testing.T) {
	forkContextOnEveryStore(t, forkBeforeTheRecordMakesItsOwn)
}
