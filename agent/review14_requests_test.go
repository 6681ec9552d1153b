package agent

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider/providertest"
)

// keptMatchReceived holds every kept request to what the provider
// received, one for one, and returns the kept ones.
func keptMatchReceived(t *testing.T, r *rig) []history.SentRequest {
	t.Helper()
	log := r.agent.Store.(history.Requests)
	ctx := context.Background()
	got := r.srv.Requests()
	n, err := log.RequestCount(ctx, r.id)
	if err != nil || n != len(got) {
		t.Fatalf("%d requests kept (%v), the provider received %d", n, err, len(got))
	}
	var out []history.SentRequest
	for i := range got {
		sr, err := log.Request(ctx, r.id, i+1)
		if err != nil || !bytes.Equal(sr.Body, got[i]) {
			t.Fatalf("request %d (%v) kept\n%.300s\nreceived\n%.300s", i+1, err, sr.Body, got[i])
		}
		out = append(out, sr)
	}
	return out
}

// A request refused as too long is kept, with no answer and why, and so
// is the smaller one sent after making room, with its answer's place.
func TestARefusedRequestAndItsRetryAreBothKeptAsReceived(t *testing.T) {
	r := newRig(t, emitTool(t))
	r.agent.KeepRequests = true
	r.agent.ContextWindow, r.agent.MaxTokens = 12000, 1000
	deadConversation(t, r, 12)
	r.srv.Push(providertest.Step{Status: 400, ErrorMessage: "prompt is too long: 14500 tokens > 11000 maximum"}, providertest.Step{Text: "back", Input: 3, Output: 4})
	if tr, _ := r.turn("go on again"); tr.Text != "back" {
		t.Fatalf("the turn ended with %q", tr.Text)
	}
	kept := keptMatchReceived(t, r)
	if len(kept) != 2 {
		t.Fatalf("%d requests kept, want the refused one and its retry: %+v", len(kept), kept)
	}
	must(t, fmt.Sprintf("the refused request kept as %+v", kept[0]),
		want{kept[0].Msg == -1, "no answer's place (-1)"},
		want{strings.Contains(kept[0].Error, "too long"), "its error to say it was too long"},
		want{kept[0].Usage == nil, "no usage"})
	msgs, _ := r.agent.Store.Messages(context.Background(), r.id)
	must(t, fmt.Sprintf("the retry kept as %+v (%d messages stored)", kept[1], len(msgs)),
		want{kept[1].Msg == len(msgs)-1, "its answer's place the last stored message"},
		want{kept[1].Error == "", "no error"},
		want{kept[1].Usage != nil && kept[1].Usage.Output == 4, "its usage, 4 output tokens"})
}

// An answer cut mid-stream: its request is kept with the place of the cut
// answer stored, and the error.
func TestARequestWhoseAnswerWasCutIsKeptWithThePlaceOfTheCutAnswer(t *testing.T) {
	r := newRig(t)
	r.agent.KeepRequests = true
	r.srv.Push(providertest.Step{Text: "a long answer that will be cut somewhere in the middle", CutAfter: 3})
	if _, err := r.agent.Turn(context.Background(), r.id, "talk", func(Event) {}); err == nil {
		t.Fatal("a cut answer ended the turn with no error")
	}
	kept := keptMatchReceived(t, r)
	msgs, _ := r.agent.Store.Messages(context.Background(), r.id)
	if len(kept) != 1 {
		t.Fatalf("%d requests kept, want 1: %+v", len(kept), kept)
	}
	must(t, fmt.Sprintf("kept %+v; %d messages stored", kept[0], len(msgs)),
		want{kept[0].Msg == len(msgs)-1, "the cut answer's place, the last stored message"},
		want{kept[0].Error != "", "the error that cut it"})
}

// Contract §13: each request sent to a provider can be read back. The
// summary request (issue 8) is sent for the conversation too.
func TestEverySummaryRequestIsKept(t *testing.T) {
	r := newRig(t)
	r.agent.KeepRequests = true
	r.agent.ContextWindow, r.agent.MaxTokens = 40000, 16000
	r.srv.Window = 40000
	summaries := 0
	r.srv.Respond = func(q providertest.Request) providertest.Step {
		if strings.Contains(q.LastUserText(), "Write that summary now") {
			summaries++
			return providertest.Step{Text: "the summary"}
		}
		return providertest.Step{Text: "ok"}
	}
	for i := 0; summaries == 0; i++ {
		if i == 30 {
			t.Fatal("no summary was asked for in 30 turns")
		}
		if _, err := r.agent.Turn(context.Background(), r.id, strings.Repeat(fmt.Sprintf("prompt %d ", i), 900), func(Event) {}); err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
	}
	keptMatchReceived(t, r)
}
