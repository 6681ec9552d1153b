package agent

import (
	"bytes"
	"context"
	"testing"

	"github.com/myelin-run/myelin/provider/providertest"
)

// A fork at the end of a turn sends, for the same next prompt, the request
// its base sent, byte for byte: the same messages, context records and
// settings, so the provider's prompt cache holds (issue 30). On every wire.
func TestAForksFirstRequestIsItsBasesRequestByteForByte(t *testing.T) {
	for _, store := range []string{"sqlite", "memory"} {
		for _, wire := range wires() {
			t.Run(store+"/"+wire, func(t *testing.T) { forkSendsItsBasesRequest(t, store, wire) })
		}
	}
}

func forkSendsItsBasesRequest(t *testing.T, store, wire string) {
	forkSendsItsBasesRequestOn(t, newRigOn(t, store, wire))
}

// forkSendsItsBasesRequestOn is the test on rig r, whatever its store.
func forkSendsItsBasesRequestOn(t *testing.T, r *rig) {
	ctx := context.Background()
	r.write("a.txt", "hello\n")
	r.srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{readCall("call_1", "a.txt")}},
		providertest.Step{Text: "read it"}, providertest.Step{Text: "second"}, providertest.Step{Text: "second, forked"})
	r.turn("first")
	c, err := r.agent.Store.Get(ctx, r.id)
	if err != nil {
		t.Fatal(err)
	}
	r.turn("again")
	fork, err := r.agent.Fork(ctx, r.id, c.Messages)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.agent.Turn(ctx, fork, "again", nil); err != nil {
		t.Fatal(err)
	}
	reqs := r.srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	if !bytes.Equal(reqs[2], reqs[3]) {
		t.Fatalf("the fork's first request differs from its base's at the same point:\nbase %s\nfork %s", reqs[2], reqs[3])
	}
}
