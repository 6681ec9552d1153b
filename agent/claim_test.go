package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/tool"
)

// keepSignal is a store that says which call's result it has kept, once
// the keep has returned.
type keepSignal struct {
	history.Store
	kept chan string
}

func (k keepSignal) Keep(ctx context.Context, id string, ps ...history.Part) error {
	err := k.Store.Keep(ctx, id, ps...)
	for _, p := range ps {
		k.kept <- p.CallID
	}
	return err
}

// A round's finished call is kept the moment it finishes: another process
// reading the store sees its result while the round's slow call still
// runs, and it is the result the round then stores.
func TestAFinishedCallIsKeptWhileItsRoundStillRuns(t *testing.T) {
	var seen []history.Part
	var r *rig
	kept := make(chan string, 4)
	slow := waitsForKeep("slow--wait", "fast", kept, &r, &seen)
	r = newRig(t, slow)
	r.agent.Store = keepSignal{r.agent.Store, kept}
	r.write("a.txt", "alpha\n")
	r.srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{readCall("fast", "a.txt"), {ID: "slow", Name: "slow--wait", Input: `{}`}}},
		providertest.Step{Text: "ok"})
	r.turn("go")
	msgs, _ := r.agent.Store.Messages(context.Background(), r.id)
	stored := msgs[2].Parts[0]
	if len(seen) != 1 || seen[0].CallID != "fast" || seen[0].Text != stored.Text || !strings.Contains(stored.Text, "alpha") {
		t.Fatalf("kept while the round ran: %+v; stored %+v", seen, stored)
	}
	if left, _ := r.agent.Store.Kept(context.Background(), r.id); len(left) != 0 {
		t.Fatalf("the round's append left kept results: %+v", left)
	}
}

// What a SIGKILL mid-round leaves — the calls, one finished call's kept
// result — is answered on restart with that result, and the unfinished
// call as interrupted.
func TestRecoveryAnswersAFinishedCallWithItsOwnResult(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	store := r.agent.Store
	err := store.Append(ctx, r.id,
		history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "both"}}},
		history.Message{Role: history.Assistant, Parts: []history.Part{
			{Type: history.ToolCallPart, CallID: "fast", Name: "workspace--read", Input: []byte(`{"path":"a.txt"}`)},
			{Type: history.ToolCallPart, CallID: "slow", Name: "shell--run", Input: []byte(`{"command":"sleep 60"}`)}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Keep(ctx, r.id, history.Part{Type: history.ToolResultPart, CallID: "fast", Text: "the real result"}); err != nil {
		t.Fatal(err)
	}
	r.agent = r.newAgent()
	r.srv.Push(providertest.Step{Text: "ok"})
	_, events := r.turn("back")
	res := r.toolResults(0)
	if len(res) != 2 || res[0]["tool_use_id"] != "fast" || res[0]["content"] != "the real result" || res[0]["is_error"] != nil ||
		res[1]["tool_use_id"] != "slow" || res[1]["content"] != Interrupted+`: there is no tool named "shell--run" now` || res[1]["is_error"] != true {
		t.Fatalf("results %v", res)
	}
	if events[0].Kind != Started || events[1].Kind != Notice || !strings.Contains(events[1].Text, "1 tool call(s) had finished and keep their own results; answered 1 tool call(s) interrupted") {
		t.Fatalf("first events %+v, %+v", events[0], events[1])
	}
}

// While a turn runs, a second writer (another store on the same file, as
// another process) is refused with the holder named, and Recover answers
// nothing; with Wait it waits, then runs its turn after the first.
func TestASecondWriterIsRefusedOrWaitsWhileATurnRuns(t *testing.T) {
	var r *rig
	waiting := make(chan string, 1)
	second := make(chan error, 1)
	slow := tool.MustFunc("slow--wait", "Waits.", func(ctx context.Context, in struct{}) (any, error) {
		other := r.newAgent()
		var refusedSaw []EventKind
		_, err := other.Turn(context.Background(), r.id, "too soon", func(e Event) { refusedSaw = append(refusedSaw, e.Kind) })
		if len(refusedSaw) > 0 {
			return nil, fmt.Errorf("the refused turn had events %v (a Started before holding the claim?)", refusedSaw)
		}
		var held *history.HeldError
		if !errors.As(err, &held) || held.Holder.PID != os.Getpid() || held.Holder.Since.IsZero() {
			return nil, errors.New("the second turn was not refused with the holder: " + errString(err))
		}
		if _, err := other.Recover(context.Background(), r.id); !errors.As(err, &held) {
			return nil, errors.New("Recover answered the running round's calls: " + errString(err))
		}
		other.Wait = true
		go func() {
			var kinds []EventKind
			_, err := other.Turn(context.Background(), r.id, "after you", func(e Event) {
				kinds = append(kinds, e.Kind)
				if e.Kind == Waiting {
					waiting <- e.Text
				}
			})
			if err == nil && (len(kinds) < 2 || kinds[0] != Waiting || kinds[1] != Started) {
				err = fmt.Errorf("the waiting turn's first events are %v, want waiting then started", kinds)
			}
			second <- err
		}()
		return "slow done, waited on by: " + <-waiting, nil
	})
	r = newRig(t, slow)
	r.srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "slow", Name: "slow--wait", Input: `{}`}}},
		providertest.Step{Text: "first done"}, providertest.Step{Text: "second done"})
	r.turn("first")
	if err := <-second; err != nil {
		t.Fatalf("the waiting turn: %v", err)
	}
	res := r.toolResults(1)[0]
	if !strings.Contains(res["content"].(string), "waiting for conversation "+r.id+": another writer is advancing it (pid ") || res["is_error"] != nil {
		t.Fatalf("the slow call: %v", res)
	}
	msgs, _ := r.agent.Store.Messages(context.Background(), r.id)
	var roles []string
	for _, m := range msgs {
		roles = append(roles, string(m.Role)+":"+textOf(m))
	}
	if got := strings.Join(roles, ","); got != "user:first,assistant:,user:,assistant:first done,user:after you,assistant:second done" {
		t.Fatalf("history %s", got)
	}
}

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}

// A turn whose claim is taken over mid-round stores nothing more: the
// round's results are refused, and the turn says the claim was lost.
func TestATurnWhoseClaimWasTakenOverWritesNothingMore(t *testing.T) {
	var r *rig
	slow := tool.MustFunc("slow--wait", "Waits.", func(ctx context.Context, in struct{}) (any, error) {
		takeOver(t, r, ctx)
		return "done", nil
	})
	r = newRig(t, slow)
	r.srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "slow", Name: "slow--wait", Input: `{}`}}})
	_, err := r.agent.Turn(context.Background(), r.id, "go", nil)
	if !errors.Is(err, history.ErrClaimLost) || !strings.Contains(err.Error(), "took it over, so nothing was written") {
		t.Fatalf("err = %v", err)
	}
	msgs, _ := r.agent.Store.Messages(context.Background(), r.id)
	if last := msgs[len(msgs)-1]; len(msgs) != 2 || last.Role != history.Assistant {
		t.Fatalf("messages %+v", msgs)
	}
	if kept, _ := r.agent.Store.Kept(context.Background(), r.id); len(kept) != 0 {
		t.Fatalf("kept %+v", kept)
	}
}

// takeOver does what another writer does once the turn's holder is gone:
// its claim released (as if run out) and taken by another holder.
func takeOver(t *testing.T, r *rig, ctx context.Context) {
	h, ok := history.WriterOf(ctx)
	if !ok {
		t.Error("the tool's context does not carry the turn's writer")
		return
	}
	other := r.newAgent().Store
	if err := other.Release(context.Background(), r.id, h); err != nil {
		t.Error(err)
	}
	if _, err := other.Claim(context.Background(), r.id, history.NewHolder(), time.Hour); err != nil {
		t.Error(err)
	}
}

// The heartbeat finds the claim lost and stops the turn at once: the tools
// are cancelled, not waited out.
func TestAHeartbeatThatFindsTheClaimLostStopsTheTurn(t *testing.T) {
	var r *rig
	slow := tool.MustFunc("slow--wait", "Waits for cancellation.", func(ctx context.Context, in struct{}) (any, error) {
		takeOver(t, r, ctx)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	r = newRig(t, slow)
	r.agent.Lease = 150 * time.Millisecond // a beat every 50 ms
	r.srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "slow", Name: "slow--wait", Input: `{}`}}})
	_, err := r.agent.Turn(context.Background(), r.id, "go", nil)
	if !errors.Is(err, history.ErrClaimLost) {
		t.Fatalf("err = %v", err)
	}
}

// raced is a store on which another process creates every conversation
// between this one's Get and Create.
type raced struct{ history.Store }

func (s raced) Get(ctx context.Context, id string) (history.Conversation, error) {
	c, err := s.Store.Get(ctx, id)
	if err == nil {
		return history.Conversation{}, fmt.Errorf("conversation %s: %w", id, history.ErrNotFound)
	}
	return c, err
}

// Two processes opening one new conversation at once: the one whose
// create comes second continues the conversation the other created
// (issue 10 §3), instead of failing on "UNIQUE constraint failed".
func TestOpenConversationCreatedMeanwhileByAnotherProcessContinuesIt(t *testing.T) {
	r := newRig(t)
	r.agent.Store = raced{r.agent.Store}
	if err := r.agent.OpenConversation(context.Background(), r.id); err != nil {
		t.Fatal(err)
	}
}

// blockingKeeps is a store whose first Keep waits until let is closed, and
// which records the batches it is given.
type blockingKeeps struct {
	history.Store
	first   sync.Once
	entered chan struct{}
	let     chan struct{}
	mu      sync.Mutex
	batches [][]string
}

func (b *blockingKeeps) Keep(ctx context.Context, id string, ps ...history.Part) error {
	b.first.Do(func() { close(b.entered); <-b.let })
	var ids []string
	for _, p := range ps {
		ids = append(ids, p.CallID)
	}
	b.mu.Lock()
	b.batches = append(b.batches, ids)
	b.mu.Unlock()
	return nil
}

// Results that finish while a keep is being committed go together in the
// next commit, kept before the round returns; the last call's result is
// left to the round's own commit.
func TestResultsFinishingDuringAKeepGoInOneCommit(t *testing.T) {
	b := &blockingKeeps{entered: make(chan struct{}), let: make(chan struct{})}
	k := &keeper{store: b, ctx: context.Background(), id: "c", running: 4}
	done := make(chan struct{})
	go func() { k.keep(history.Part{CallID: "a"}); close(done) }()
	<-b.entered
	k.keep(history.Part{CallID: "b"}) // queued: returns at once
	k.keep(history.Part{CallID: "c"})
	close(b.let)
	<-done                            // the committing call returns once the queue is drained
	k.keep(history.Part{CallID: "d"}) // the last: the round's commit stores it
	if got := fmt.Sprint(b.batches); got != "[[a] [b c]]" {
		t.Fatalf("batches %s", got)
	}
}

// Results still queued behind a keep when the round's last call finishes
// are left, like the last one's, to the round's own commit, which follows
// at once: calls finishing together cost one keep, not two.
func TestResultsQueuedWhenTheLastCallFinishesAreLeftToTheRoundsCommit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		running int
		queued  []string // finished while the first keep commits
		later   []string // finished after it returned
		want    string
	}{
		{"all finish during the first keep", 3, []string{"b", "c"}, nil, "[[a]]"},
		{"one still runs after the first keep", 4, []string{"b", "c"}, []string{"d"}, "[[a] [b c]]"},
		{"each finishes alone", 3, nil, []string{"b", "c"}, "[[a] [b]]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &blockingKeeps{entered: make(chan struct{}), let: make(chan struct{})}
			k := &keeper{store: b, ctx: context.Background(), id: "c", running: tc.running}
			done := make(chan struct{})
			go func() { k.keep(history.Part{CallID: "a"}); close(done) }()
			<-b.entered
			for _, id := range tc.queued {
				k.keep(history.Part{CallID: id}) // queued: returns at once
			}
			close(b.let)
			<-done
			for _, id := range tc.later {
				k.keep(history.Part{CallID: id})
			}
			if got := fmt.Sprint(b.batches); got != tc.want {
				t.Fatalf("batches %s, want %s", got, tc.want)
			}
		})
	}
}

// countingKeeps is a store that records the batches it is given and never
// blocks.
type countingKeeps struct {
	history.Store
	mu      sync.Mutex
	batches [][]string
}

func (c *countingKeeps) Keep(ctx context.Context, id string, ps ...history.Part) error {
	var ids []string
	for _, p := range ps {
		ids = append(ids, p.CallID)
	}
	c.mu.Lock()
	c.batches = append(c.batches, ids)
	c.mu.Unlock()
	return nil
}

// On a machine too busy to run a round's calls side by side, they finish
// one after another on one thread: a keep yields before it commits, so
// that calls finishing at that moment join it — here all of them, so the
// round's own commit stores them and nothing is kept — instead of one
// commit each (nine for ten calls, as before).
func TestCallsFinishingOneAfterAnotherOnABusyMachineShareAKeep(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const calls = 10
	c := &countingKeeps{}
	k := &keeper{store: c, ctx: context.Background(), id: "c", running: calls}
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() { k.keep(history.Part{CallID: fmt.Sprint(i)}) })
	}
	wg.Wait()
	if len(c.batches) > 1 {
		t.Fatalf("%d keeps for %d calls finishing together: %v; want at most one", len(c.batches), calls, c.batches)
	}
}

func TestRecoveryLooksPastAContextRecordStoredAfterTheCalls(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	err := r.agent.Store.Append(ctx, r.id,
		history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "go"}}},
		history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.ToolCallPart, CallID: "c1", Name: "shell--run", Input: []byte(`{"command":"sleep 60"}`)}}},
		history.Message{Role: history.Context, Edit: &history.Edit{Why: "test"}})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := r.agent.Recover(ctx, r.id)
	if err != nil || rec.Interrupted != 1 {
		t.Fatalf("Recover = %+v, %v; want the call behind the record answered", rec, err)
	}
}

func TestATurnRunsOnAnInMemoryStoreAsOnSQLite(t *testing.T) {
	r := newRig(t)
	r.agent.Store = &history.Memory{}
	id, err := r.agent.NewConversation(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r.id = id
	r.write("a.txt", "alpha\n")
	r.srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{readCall("toolu_1", "a.txt")}}, providertest.Step{Text: "alpha it is"})
	tr, _ := r.turn("read a.txt")
	if tr.Text != "alpha it is" || tr.Rounds != 1 {
		t.Fatalf("turn %+v", tr)
	}
	if res := r.toolResults(1); len(res) != 1 || res[0]["content"] != "     1\talpha\n[lines 1-1 of 1 in a.txt; end of file]" {
		t.Fatalf("results %v", res)
	}
	if msgs, _ := r.agent.Store.Messages(context.Background(), id); len(msgs) != 4 {
		t.Fatalf("%d messages stored in memory; want 4", len(msgs))
	}
}
